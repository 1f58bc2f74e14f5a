"""The agent's overhead, side by side in one run: a CPU-bound workload alone, under
`perfsleuth agent` (defaults: 19 Hz per CPU, DWARF stacks, 20 s windows, pushing to a
local collector), and under `perf record -a -g -F 19` alone.

Rounds are interleaved (alone, agent, perf, alone, agent, perf, ...) so that drift
in the machine's load hits every condition alike. For each profiler it reports the
workload's slowdown (median wall time against the median alone), the profiler's own
CPU as a share of the host's CPU while the workload ran (agent + its forked window
converters + its perf), and its memory (the agent's and perf's RSS, sampled; the
converter's transient peak apart). Targets: <= 1% of the host's CPU, <= 100 MB RSS.

Run as root:  .venv/bin/python bench/agent_overhead.py [--rounds 3] [--iterations N]
                  [--also "--python-processes 0"] [--python ROUNDS] [--baseline SRC]
`--also ARGS` adds a condition: the agent with those arguments, in the same rounds (on
a machine shared with busy Python processes, the default agent samples them with py-spy
too, which `--python-processes 0` leaves out). `--python ROUNDS` makes the workload a
busy CPython process, examples/python/json_heavy.py ROUNDS, which the agent gives Python
frames (py-spy beside perf, agent/python_sampler.py): with `--also "--python-processes
0"` the cost of those frames is the difference between the two agent rows.
`--baseline SRC` adds the agent of another source tree (PYTHONPATH=SRC, e.g. a
checkout of main before a change) with the same arguments, in the same rounds.

"CPU of host" is the profiler's share while the workload ran (after its warm-up);
"since start" counts from the profiler's start (its Python start-up and first windows'
naming of every program on the host included) to the workload's end.

The agents' sources are compiled to bytecode first (`compileall`), as an installed
package's are: with PYTHONDONTWRITEBYTECODE set (as on this machine) each agent start
otherwise compiled ~90 modules again, 0.09 of its 0.24 CPU-s of imports.

Each agent run starts with a spool of its own, as on a host the agent never ran on:
no symbol answers kept from an earlier run (agent/symbol_cache.py). `--warm` keeps one
spool per condition across rounds instead, as an agent restarted on its host.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "examples" / "bin" / "hotspots"
PYTHON_WORKLOAD = ROOT / "examples" / "python" / "json_heavy.py"
PERFSLEUTH = Path(sys.executable).parent / "perfsleuth"
TICK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
# Before the workload: as many seconds as two 10 s windows took when that was the
# default window (now its first 20 s window and a few seconds of converting it)
WARMUP_S = 23


def stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_with_reaped_children(pid: int) -> float:
    """utime + stime + cutime + cstime: the process and the children it waited for."""
    try:
        fields = stat(pid)
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / TICK


def own_cpu(pid: int) -> float:
    try:
        return sum(int(x) for x in stat(pid)[11:13]) / TICK
    except OSError:
        return 0.0


def rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


@dataclass
class Tree:
    """A profiler's process and its children, watched while the workload runs."""

    root: int
    peak_rss: int = 0  # the profiler and its long-lived child (perf)
    peak_converter_rss: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def cpu(self) -> float:
        kids = children(self.root)
        # the agent's perf is only reaped at the end: its CPU comes from its own stat
        return cpu_with_reaped_children(self.root) + sum(map(own_cpu, kids))

    def watch(self) -> threading.Thread:
        def loop() -> None:
            while not self._stop.wait(0.2):
                kids = children(self.root)
                perf = [k for k in kids if _comm(k) == "perf"]  # converters are "perfsleuth"
                others = [k for k in kids if k not in perf]
                self.peak_rss = max(self.peak_rss, rss(self.root) + sum(map(rss, perf)))
                self.peak_converter_rss = max([self.peak_converter_rss, *(rss(k) for k in others)])

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def compile_sources(env: dict[str, str] | None) -> None:
    """Bytecode for the perfsleuth the agent of `env` imports, as pip writes at install."""
    code = (
        "import compileall, os, perfsleuth as p; "
        "compileall.compile_dir(os.path.dirname(p.__file__), quiet=1)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def run_workload(argv: list[str]) -> float:
    began = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - began


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_collector(store: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [str(PERFSLEUTH), "collector", "--listen", f"127.0.0.1:{port}", "--store", str(store)]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the collector did not start")


@dataclass
class Measured:
    walls: list[float] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    converter_rss: list[int] = field(default_factory=list)
    since_start: list[float] = field(default_factory=list)


def profiled(
    cmd: list[str],
    workload: list[str],
    warmup_s: float,
    into: Measured,
    env: dict[str, str] | None = None,
) -> None:
    """Start the profiler, let it settle, run the workload under it, stop it."""
    began = time.monotonic()
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
    tree = Tree(proc.pid)
    watcher = tree.watch()
    time.sleep(warmup_s)
    cpu0, t0 = tree.cpu(), time.monotonic()
    into.walls.append(run_workload(workload))
    cpu1, t1 = tree.cpu(), time.monotonic()
    tree.stop()
    watcher.join()
    proc.send_signal(signal.SIGINT)
    proc.wait(300)  # an agent's last window on a loaded host may take a while
    into.shares.append((cpu1 - cpu0) / (t1 - t0) / NCPU)
    into.since_start.append(cpu1 / (t1 - began) / NCPU)
    into.rss.append(tree.peak_rss)
    into.converter_rss.append(tree.peak_converter_rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=60_000_000, help="hotspots' argument")
    parser.add_argument("--also", metavar="ARGS", help="a second agent condition's arguments")
    parser.add_argument("--python", type=int, metavar="ROUNDS", help="json_heavy.py as workload")
    parser.add_argument("--baseline", type=Path, metavar="SRC", help="another tree's agent too")
    parser.add_argument("--warm", action="store_true", help="one spool per condition, kept")
    args = parser.parse_args()
    workload = [str(WORKLOAD), str(args.iterations)]
    if args.python:
        workload = [sys.executable, str(PYTHON_WORKLOAD), str(args.python)]
    if os.geteuid() != 0:
        raise SystemExit("run as root: both profilers sample every CPU")
    alone, agent, perf, also, baseline = Measured(), Measured(), Measured(), Measured(), Measured()
    baseline_env = {**os.environ, "PYTHONPATH": str(args.baseline)} if args.baseline else None
    compile_sources(None)
    if baseline_env:
        compile_sources(baseline_env)
    with tempfile.TemporaryDirectory() as tmp:
        collector, url = start_collector(Path(tmp) / "fleet")
        agent_cmd = [str(PERFSLEUTH), "agent", "--server", url]

        def spool(condition: str, r: int) -> list[str]:
            return ["--spool", f"{tmp}/spool-{condition}" + ("" if args.warm else f"-{r}")]

        perf_cmd = ["perf", "record", "-a", "-g", "-F", "19", "-q", "-o", f"{tmp}/perf.data"]
        try:
            for r in range(args.rounds):
                alone.walls.append(run_workload(workload))
                # its first window first: the agent's first symbolization is a one-off, and a
                # fleet host is mostly long-running services (steady state)
                profiled([*agent_cmd, *spool("agent", r)], workload, WARMUP_S, agent)
                if args.also:
                    also_cmd = [*agent_cmd, *spool("also", r), *args.also.split()]
                    profiled(also_cmd, workload, WARMUP_S, also)
                if baseline_env:
                    base_cmd = [*agent_cmd, *spool("baseline", r)]
                    profiled(base_cmd, workload, WARMUP_S, baseline, baseline_env)
                profiled(perf_cmd, workload, 1, perf)
                shares = ", ".join(
                    f"{name} {m.shares[-1]:.2%} ({m.since_start[-1]:.2%} since start)"
                    for name, m in (("agent", agent), ("also", also), ("baseline", baseline))
                    if m.shares
                )
                print(
                    f"round {r + 1}: alone {alone.walls[-1]:.2f}s, agent {agent.walls[-1]:.2f}s, "
                    f"perf {perf.walls[-1]:.2f}s, load {os.getloadavg()[0]:.1f}; CPU of host: "
                    f"{shares}",
                    flush=True,
                )
        finally:
            collector.send_signal(signal.SIGTERM)
            collector.wait(30)
    base = statistics.median(alone.walls)
    print(
        f"\nworkload: {' '.join(Path(a).name for a in workload)}, {NCPU} CPUs, {args.rounds} rounds"
    )
    print(
        f"{'':34} {'slowdown':>9} {'CPU of host':>12} {'since start':>12} {'RSS':>8} "
        f"{'converter peak':>15}"
    )
    print(f"{'alone':34} {'-':>9} {'-':>12} {'-':>12} {'-':>8} {'-':>15}   median {base:.2f}s")
    rows = [("perfsleuth agent (19 Hz, dwarf)", agent), ("perf record -a -g -F 19", perf)]
    if args.also:
        rows.insert(1, (f"agent {args.also}", also))
    if args.baseline:
        rows.insert(1, (f"agent of {args.baseline}", baseline))
    for name, m in rows:
        slowdown = statistics.median(m.walls) / base - 1
        share = statistics.median(m.shares)
        since = statistics.median(m.since_start)
        mb = max(m.rss) / (1 << 20)
        conv = f"{max(m.converter_rss) / (1 << 20):.0f} MB" if max(m.converter_rss) else "-"
        print(f"{name:34} {slowdown:>+9.1%} {share:>12.2%} {since:>12.2%} {mb:>5.0f} MB {conv:>15}")


if __name__ == "__main__":
    main()
