"""The agent's Python frames: real perf, real py-spy, a real collector on 127.0.0.1.

examples/python/json_heavy.py and zlib_mixed.py, and a loop writing to an unbuffered
file, run under names of their own (links to the venv's interpreter, so their comms
are `pyjson-agent`, `pyzlib-agent` and `pywrite-agent`) while
the agent samples the host in 2 s windows; the fleet queries must show their Python
functions spliced into the agent's own perf samples: libz's deflate right above its
one Python caller (pack_logs), the kernel frames perf took of them kept, py-spy
reading them without stopping them (--nonblocking), and the fleet advisor giving the
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

from perfsleuth.model.profile import PYTHON_DSO_PREFIX

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"
EXAMPLE = EXAMPLES / "json_heavy.py"
COMM = "pyjson-agent"
ZLIB = "pyzlib-agent"
WRITER = "pywrite-agent"
# one write(2) per record: most of its time in the kernel, under its Python frame
WRITES_UNBUFFERED = (
    "with open('/dev/null', 'wb', buffering=0) as out:\n"
    "    while True:\n"
    "        out.write(b'event\\n')\n"
)
FAKE = "python3.99"
WANTED = {"main", "serialize", "parse", "dumps"}

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="the agent samples every CPU: needs root"),
    pytest.mark.skipif(shutil.which("perf") is None, reason="needs Linux perf"),
]


@pytest.fixture
def programs(tmp_path: Path) -> Iterator[dict[str, int]]:
    """The json example as `pyjson-agent`, the zlib one as `pyzlib-agent`, the unbuffered
    writer as `pywrite-agent` and hotspots as `python3.99`, all busy."""
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    for comm in (COMM, ZLIB, WRITER):
        (tmp_path / comm).symlink_to(Path(sys.executable).resolve())
    fake = tmp_path / FAKE
    shutil.copy(HOTSPOTS, fake)
    argvs = {
        COMM: [tmp_path / COMM, EXAMPLE, "100000"],
        ZLIB: [tmp_path / ZLIB, EXAMPLES / "zlib_mixed.py", "100000"],
        WRITER: [tmp_path / WRITER, "-c", WRITES_UNBUFFERED],
        FAKE: [fake, "100000000000"],
    }
    procs = {
        name: subprocess.Popen(list(map(str, argv)), stdout=subprocess.DEVNULL)
        for name, argv in argvs.items()
    }
    yield {name: proc.pid for name, proc in procs.items()}
    for proc in procs.values():
        proc.kill()
        proc.wait()


def top(store: Path, comm: str) -> dict:
    where = ["--from", "1h", "--where", f"comm={comm}", "--total", "-n", "100000"]
    return json.loads(fleet(store, "top", *where, "--format", "json"))


def python_rows(store: Path) -> list[dict]:
    return [r for r in top(store, COMM)["rows"] if r["dso"].startswith(PYTHON_DSO_PREFIX)]


def python_functions(store: Path) -> set[str]:
    return {r["function"] for r in python_rows(store)}


def folded(store: Path, comm: str) -> list[tuple[list[str], int]]:
    """The fleet's stacks of COMM: function names root first (kernel ones marked `_[k]`,
    Python ones without their `(file:line)`), samples."""
    text = fleet(store, "flame", "--folded", "--from", "1h", "--where", f"comm={comm}")
    stacks = [line.rpartition(" ") for line in text.splitlines() if line.strip()]
    return [([f.split(" (")[0] for f in s.split(";")], int(n)) for s, _, n in stacks]


def deflate_callers(store: Path) -> dict[str, int]:
    """Samples in libz's deflate by the frame below zlib_compress (its Python caller)."""
    callers: dict[str, int] = {}
    for frames, count in folded(store, ZLIB):
        if "deflate" in frames and "zlib_compress" in frames and "main" in frames:
            caller = frames[frames.index("zlib_compress") - 1]
            callers[caller] = callers.get(caller, 0) + count
    return callers


def kernel_under_python(store: Path) -> list[list[str]]:
    """Stacks of the Python processes whose leaf is a kernel frame under a Python frame."""
    stacks = folded(store, WRITER) + folded(store, ZLIB) + folded(store, COMM)
    return [f for f, _ in stacks if f[-1].endswith("_[k]") and ("main" in f or "<module>" in f)]


def py_spy_argvs(agent: int) -> list[list[str]]:
    """The command lines of the agent's py-spy runs going now."""
    out = []
    for task in Path(f"/proc/{agent}/task").iterdir():
        for child in (task / "children").read_text().split():
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if Path(argv[0].decode()).name == "py-spy":
                out.append([a.decode() for a in argv if a])
    return out


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
    # only ours: other Python processes of this shared machine may be busier
    match = f"{COMM}|{ZLIB}|{WRITER}|{FAKE}".replace(".", r"\.")
    agent = start_agent(collector.url, tmp_path / "spool", "agent-python", "--python-match", match)
    pid = programs[FAKE]
    try:
        skipped = wait_for_line(agent, f"(pid {pid})", 180)
        wait_for(lambda: len(py_spy_argvs(agent.pid)) >= 2, 60, "no py-spy runs")
        spies = py_spy_argvs(agent.pid)
        wait_for(lambda: len(collector.windows()) >= 2, 180, "no windows reached the store")
        # at load 12 on 2 cores the example gets a sixth of a core: minutes to see each
        wait_for(lambda: python_functions(collector.store) >= WANTED, 420, "no Python frames")
        wait_for(lambda: sum(deflate_callers(collector.store).values()) >= 20, 240, "no deflate")
        # kernel frames perf took of the Python processes stay, under their Python frames;
        # sampled: a busy machine may take a while to catch the processes in the kernel
        wait_for(lambda: bool(kernel_under_python(collector.store)), 120, "no kernel frames")
        callers = deflate_callers(collector.store)
        python = {r["function"]: r for r in python_rows(collector.store)}
        fake = top(collector.store, FAKE)
        where = ["--from", "1h", "--where", f"comm={COMM}", "--format", "json"]
        advice = json.loads(fleet(collector.store, "advise", *where))
        status = json.loads(fleet(collector.store, "status", "--format", "json"))
        log = skipped + stop_agent(agent)
    finally:
        agent.kill()
        collector.stop()
    # py-spy reads the processes without stopping them; perf takes their stacks
    assert all("--nonblocking" in argv and "--native" not in argv for argv in spies), spies
    # the native hot spot right above its one Python caller, its C frames kept
    assert max(callers, key=callers.__getitem__) == "pack_logs", callers
    # three quarters, not all: a perf sample is spliced with the py-spy snapshot nearest
    # in time, and on a loaded machine the thread may have moved on to checksum_blocks
    # (at 90% this failed about 1 run in 7 at load 6-10, in clean-clone CI too)
    assert callers["pack_logs"] >= 0.75 * sum(callers.values()), callers
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
