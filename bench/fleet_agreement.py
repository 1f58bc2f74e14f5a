"""Does the fleet see what a recording sees? The agent's fleet TopN against
`perfsleuth record` of the same programs over the same minutes (issue 16's check:
within 2 points).

Two example programs run side by side for --minutes: hotspots, built without frame
pointers, and map_alloc, std::map and malloc heavy. Meanwhile `perfsleuth agent`
(defaults: 19 Hz per CPU, DWARF stacks, 20 s windows) pushes to a local collector, and
one `perfsleuth record --pid P --duration S` per program records it at perf's default
rate.
Then, per program, the fleet TopN (`fleet top --where comm=NAME`) is set against the
recording's TopN: self and total share of the ten hottest functions, the largest
difference in points, and the share of the fleet's stacks that reach `main`.

Run as root:  .venv/bin/python bench/fleet_agreement.py [--minutes 5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "examples" / "bin"
PERFSLEUTH = str(Path(sys.executable).parent / "perfsleuth")
TOKEN = "agreement-bench"
WINDOW_S = 20  # the agent's default
# name in /proc/PID/comm -> the command that keeps it busy
PROGRAMS = {
    "hotspots": [str(BIN / "hotspots"), "100000000000"],
    "map_alloc": [str(BIN / "map_alloc"), "100000000"],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"fleet_agreement: {what}")
        time.sleep(0.2)


def run_json(*args: str) -> dict:
    done = subprocess.run([PERFSLEUTH, *args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"fleet_agreement: perfsleuth {' '.join(args)}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def shares(doc: dict) -> dict[str, tuple[float, float]]:
    return {row["function"]: (row["self"], row["total"]) for row in doc["rows"]}


def compare(name: str, fleet: dict, recorded: dict) -> float:
    f, r = shares(fleet), shares(recorded)
    hottest = sorted(r, key=lambda fn: -r[fn][0])[:10]
    print(f"\n{name}: fleet {fleet['total']:,.0f} {fleet['unit']}, record {recorded['total']:,.0f}")
    print(f"{'function':48} {'rec self':>9} {'fleet self':>10} {'rec total':>9} {'fleet tot':>9}")
    worst = 0.0
    for fn in hottest:
        rs, rt = r[fn]
        fs, ft = f.get(fn, (0.0, 0.0))
        worst = max(worst, abs(rs - fs), abs(rt - ft))
        print(f"{fn[:48]:48} {100 * rs:8.1f}% {100 * fs:9.1f}% {100 * rt:8.1f}% {100 * ft:8.1f}%")
    print(f"largest difference: {100 * worst:.1f} points (target: 2)")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    args = parser.parse_args()
    seconds = int(args.minutes * 60)
    work = Path(tempfile.mkdtemp(prefix="fleet-agreement-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    collector = subprocess.Popen(
        [PERFSLEUTH, "collector", "--listen", f"127.0.0.1:{port}"]
        + ["--store", str(work / "fleet"), "--token", TOKEN],
        stderr=subprocess.DEVNULL,
    )
    programs = {n: subprocess.Popen(c, stdout=subprocess.DEVNULL) for n, c in PROGRAMS.items()}
    agent = None
    try:
        wait_for(lambda: healthy(url), 30, "the collector did not start")
        agent = subprocess.Popen(
            [PERFSLEUTH, "agent", "--server", url, "--token", TOKEN, "--spool"]
            + [str(work / "spool"), "--labels", "service=agreement", "--window", str(WINDOW_S)],
            stderr=subprocess.DEVNULL,
        )
        time.sleep(WINDOW_S)  # the agent's first window is under way
        started = time.time()
        recorders = {
            name: subprocess.Popen(
                [PERFSLEUTH, "record", "--store", str(work / f"run-{name}"), "--pid"]
                + [str(proc.pid), "--duration", str(seconds)],
                stderr=subprocess.DEVNULL,
            )
            for name, proc in programs.items()
        }
        for recorder in recorders.values():
            recorder.wait(timeout=seconds + 600)
        ended = time.time()
        time.sleep(2 * WINDOW_S)  # the last window is pushed
    finally:
        if agent is not None:
            agent.send_signal(signal.SIGTERM)
            agent.wait(timeout=120)
        for proc in programs.values():
            proc.kill()
            proc.wait()
        collector.send_signal(signal.SIGTERM)
        collector.wait(timeout=60)
    span = ["--from", str(int(started)), "--to", str(int(ended) + 1)]
    print(f"{args.minutes:g} minutes, agent at its defaults, {os.cpu_count()} CPUs")
    worst = 0.0
    for name in PROGRAMS:
        fleet = run_json(
            "fleet",
            "top",
            "--store",
            str(work / "fleet"),
            *span,
            "--where",
            f"comm={name}",
            "-n",
            "0",
            "--format",
            "json",
        )
        recorded = run_json(
            "top", "--store", str(work / f"run-{name}"), "-n", "0", "--format", "json"
        )
        worst = max(worst, compare(name, fleet, recorded))
        mains = shares(fleet).get("main", (0.0, 0.0))[1]
        print(f"fleet stacks of {name} that reach main: {100 * mains:.1f}%")
    print(f"\nlargest difference over both programs: {100 * worst:.1f} points")


if __name__ == "__main__":
    main()
