"""Late symbolization from a real debuginfod (elfutils): a stripped binary profiled the
way the agent does it and pushed to a real collector; `fleet top --debuginfod URL`
fetches the debug file of its build-id once, keeps it in the store, and names its
frames with file:line as addr2line does.

debuginfod 0.188 has no listen-address option, so it runs in a network namespace of
its own (`unshare -n`) whose only interface is loopback, and the queries that reach it
run in that namespace too (`nsenter -n`): nothing outside this test can connect."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from integration.test_collector import PERFSLEUTH, TOKEN, push_window, start, stop
from integration.test_fleet_late_symbols import HOTSPOTS, stripped_window

from perfsleuth.binaries import elf_info

PORT = 8002
URL = f"http://127.0.0.1:{PORT}"
DEAD = "http://127.0.0.1:8003"  # nothing listens there

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("debuginfod") is None, reason="needs debuginfod"),
]


@dataclass
class Debuginfod:
    proc: subprocess.Popen
    served: Path  # the folder it serves (rescanned every second)

    def run(self, *cmd: str) -> subprocess.CompletedProcess:
        """CMD in the server's network namespace."""
        return subprocess.run(
            ["nsenter", "-t", str(self.proc.pid), "-n", *cmd], capture_output=True, text=True
        )

    def debuginfo_requests(self) -> int:
        metrics = self.run("curl", "-sf", f"{URL}/metrics").stdout
        counts = [line for line in metrics.splitlines() if 'type="debuginfo"' in line]
        return int(counts[0].split()[-1]) if counts else 0

    def wait_served(self, build_id: str) -> None:
        deadline = time.monotonic() + 60
        path = f"{URL}/buildid/{build_id}/debuginfo"
        while self.run("curl", "-sf", "-o", "/dev/null", path).returncode != 0:
            assert time.monotonic() < deadline, "debuginfod never served the debug file"
            time.sleep(0.2)


@pytest.fixture
def debuginfod(tmp_path: Path) -> Iterator[Debuginfod]:
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot make a network namespace (unshare -n needs root)")
    served = tmp_path / "served"
    served.mkdir()
    server = f"exec debuginfod -p {PORT} -F -t 1 -g 0 -d {tmp_path / 'db.sqlite'} {served}"
    proc = subprocess.Popen(
        ["unshare", "-n", "bash", "-c", f"ip link set lo up && {server}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ready = Debuginfod(proc, served)
    try:
        deadline = time.monotonic() + 30
        while ready.run("curl", "-sf", "-o", "/dev/null", f"{URL}/metrics").returncode != 0:
            assert proc.poll() is None and time.monotonic() < deadline, "debuginfod did not start"
            time.sleep(0.1)
        yield ready
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def source_line(binary: Path, name: str) -> tuple[str, int]:
    """addr2line's file:line of function NAME itself (the outermost of its start's
    inline chain)."""
    nm = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True)
    address = next(line.split()[0] for line in nm.stdout.splitlines() if line.endswith(f" {name}"))
    done = subprocess.run(
        ["addr2line", "-i", "-e", str(binary), f"0x{address}"], capture_output=True
    )
    path, _, line = done.stdout.decode().split()[-1].rpartition(":")
    return path, int(line.split()[0])


def mix_lines(source: str) -> range:
    """The lines of hotspots.c's always-inlined mix(), which the compute_* functions hold."""
    lines = Path(source).read_text().splitlines()
    first = next(i for i, text in enumerate(lines, 1) if " mix(unsigned long x)" in text)
    return range(first, first + lines[first - 1 :].index("}") + 1)


def top_by_line(
    store: Path, *servers: str, server: Debuginfod | None = None
) -> tuple[dict[str, list[dict]], str]:
    """`fleet top --by line` of the stripped program's frames, by function, and what it
    warned."""
    cmd = [str(PERFSLEUTH), "fleet", "top", "--store", str(store), "--where", "comm=hs-stripped"]
    cmd += ["--by", "line", "-n", "0", "--format", "json"]
    if servers:
        cmd += ["--debuginfod", " ".join(servers)]
    done = server.run(*cmd) if server else subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows: dict[str, list[dict]] = {}
    for row in json.loads(done.stdout)["rows"]:
        if row["dso"] == "hs-stripped":
            rows.setdefault(row["function"], []).append(row)
    return rows, done.stderr


def test_fleet_queries_fetch_debug_info_from_debuginfod_once_and_keep_it(
    tmp_path: Path, debuginfod: Debuginfod
) -> None:
    window = stripped_window(tmp_path, "hs-stripped")
    store = tmp_path / "fleet"
    collector = start(store, "--token", TOKEN)
    try:
        assert push_window(collector, window)[0] == 200  # type: ignore[arg-type]
    finally:
        stop(collector)
    info = elf_info(str(HOTSPOTS))
    assert info is not None
    build_id = info.build_id
    missing = store / "debuginfo" / f"{build_id}.missing"

    # A server that does not answer: one warning, the query still answers.
    rows, warned = top_by_line(store, DEAD, server=debuginfod)
    assert all(f.startswith("[unknown] hs-stripped+0x") for f in rows)
    assert f"debuginfod server {DEAD} did not answer" in warned and warned.count("\n") == 1
    assert not missing.exists()

    # A server without the file: remembered, and not asked again by the next query.
    rows, warned = top_by_line(store, URL, server=debuginfod)
    assert all(f.startswith("[unknown]") for f in rows) and warned == ""
    assert missing.exists() and debuginfod.debuginfo_requests() == 1
    top_by_line(store, URL, server=debuginfod)
    assert debuginfod.debuginfo_requests() == 1

    # The debug file arrives; a day later (the marker gone) the query fetches and keeps it.
    debug = debuginfod.served / "hotspots.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(HOTSPOTS), str(debug)], check=True)
    debuginfod.wait_served(build_id)
    missing.unlink()
    asked = debuginfod.debuginfo_requests()
    rows, warned = top_by_line(store, URL, server=debuginfod)
    assert debuginfod.debuginfo_requests() == asked + 1 and warned == ""
    assert {"compute_a", "compute_b", "compute_c", "work"} <= set(rows)
    assert not any(f.startswith("[unknown]") for f in rows)
    for name in ("compute_a", "compute_b", "compute_c"):
        path, line = source_line(HOTSPOTS, name)  # COMPUTE(name, ...): one line
        assert {r["file"] for r in rows[name]} == {path}
        assert {r["line"] for r in rows[name]} <= {line, *mix_lines(path)}
    assert (store / "debuginfo" / f"{build_id}.debug").is_file()
    assert (store / "symbols" / f"{build_id}.parquet").is_file()

    # Kept: named the same with the server gone and no server given.
    debuginfod.proc.send_signal(signal.SIGTERM)
    debuginfod.proc.wait(timeout=30)
    again, _ = top_by_line(store)
    assert again == rows
