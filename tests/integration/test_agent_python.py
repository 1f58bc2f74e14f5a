"""The agent's Python frames: real perf, real py-spy, a real collector on 127.0.0.1.

examples/python/json_heavy.py runs under a name of its own (a link to the venv's
interpreter, so its comm is `pyjson-agent`) while the agent samples the host in 2 s
windows; the fleet queries must show its Python functions, and the fleet advisor the
json finding. A busy native program named like an interpreter (`python3.99`, the
hotspots example) is one py-spy cannot read: skipped with a counted warning, its
perf samples kept.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_agent_daemon import (
    HOTSPOTS,
    fleet,
    start_agent,
    start_collector,
    wait_for,
    wait_for_line,
)

from perfsleuth.formats.py_spy import PYTHON_DSO_PREFIX

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "json_heavy.py"
COMM = "pyjson-agent"
FAKE = "python3.99"
# Python processes get their stacks from py-spy; frame-pointer stacks for the rest
# keep the agent's conversions short enough for 2 s windows on a loaded machine
CHEAP = ("--call-graph", "fp")
WANTED = {"main", "serialize", "parse", "dumps"}

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="the agent samples every CPU: needs root"),
    pytest.mark.skipif(shutil.which("perf") is None, reason="needs Linux perf"),
]


@pytest.fixture
def programs(tmp_path: Path) -> Iterator[dict[str, int]]:
    """The json example as `pyjson-agent`, and hotspots as `python3.99`, both busy."""
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    interpreter = tmp_path / COMM
    interpreter.symlink_to(Path(sys.executable).resolve())
    fake = tmp_path / FAKE
    shutil.copy(HOTSPOTS, fake)
    procs = [
        subprocess.Popen([str(interpreter), str(EXAMPLE), "100000"], stdout=subprocess.DEVNULL),
        subprocess.Popen([str(fake), "100000000000"], stdout=subprocess.DEVNULL),
    ]
    yield {COMM: procs[0].pid, FAKE: procs[1].pid}
    for proc in procs:
        proc.kill()
        proc.wait()


def top(store: Path, comm: str) -> dict:
    where = ["--from", "1h", "--where", f"comm={comm}", "--total", "-n", "60"]
    return json.loads(fleet(store, "top", *where, "--format", "json"))


def python_rows(store: Path) -> list[dict]:
    return [r for r in top(store, COMM)["rows"] if r["dso"].startswith(PYTHON_DSO_PREFIX)]


def python_functions(store: Path) -> set[str]:
    return {r["function"] for r in python_rows(store)}


def stop_agent(agent: subprocess.Popen) -> str:
    """SIGTERM; an agent behind on a loaded machine converts what perf left first."""
    agent.send_signal(signal.SIGTERM)
    _, err = agent.communicate(timeout=300)
    assert agent.returncode == 0 and "Traceback" not in err, err
    return str(err)


def test_cpython_processes_have_python_frames_in_the_fleet(
    tmp_path: Path, programs: dict[str, int]
) -> None:
    collector = start_collector(tmp_path / "fleet")
    # 8 places: other Python processes of this shared machine may be busier than ours
    agent = start_agent(
        collector.url, tmp_path / "spool", "agent-python", "--python-processes", "8", *CHEAP
    )
    pid = programs[FAKE]
    try:
        skipped = wait_for_line(agent, f"(pid {pid})", 180)
        wait_for(lambda: len(collector.windows()) >= 2, 180, "no windows reached the store")
        wait_for(lambda: python_functions(collector.store) >= WANTED, 240, "no Python frames")
        python = {r["function"]: r for r in python_rows(collector.store)}
        fake = top(collector.store, FAKE)
        where = ["--from", "1h", "--where", f"comm={COMM}", "--format", "json"]
        advice = json.loads(fleet(collector.store, "advise", *where))
        status = json.loads(fleet(collector.store, "status", "--format", "json"))
        log = skipped + stop_agent(agent)
    finally:
        agent.kill()
        collector.stop()
    # Python functions with their module, file and line, under the interpreter's comm
    serialize = python["serialize"]
    assert serialize["dso"] == "[python:json_heavy]" and serialize["file"] == str(EXAMPLE)
    assert serialize["line"] == 30 and serialize["total"] > 0, serialize
    assert python["dumps"]["dso"] == "[python:json]", python["dumps"]
    # the fleet advisor reads them: the json finding, at the example's own code
    found = {f["rule"]: f for f in advice["findings"]}
    assert "python.json" in found, sorted(found)
    assert found["python.json"]["function"] in ("serialize", "parse"), found["python.json"]
    # py-spy cannot read the look-alike: one counted warning, its native samples kept
    assert f"no Python frames: {FAKE} (pid {pid}) is not a CPython interpreter" in log, log
    lines = [line for line in log.splitlines() if f"(pid {pid})" in line]
    assert len(lines) == 1 and "skipped so far" in lines[0], lines
    assert {"compute_a", "work"} & {r["function"] for r in fake["rows"]}, fake["rows"][:5]
    (host,) = [h for h in status["hosts"] if h["host"] == "agent-python"]
    assert host["metrics"]["python_runs"] >= 1 and host["metrics"]["python_skipped"] >= 1
