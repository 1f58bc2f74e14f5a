"""A fleet simulator: N hosts running S services push realistic windows to a collector.

The stacks are real: `--record` profiles a few examples once with perf (DWARF
stacks) and keeps their stacks in bench/fleet_sim_stacks.json. Each service runs
a mix of those programs with one planted hot spot (glibc malloc/free from
map_alloc, zlib deflate from zlib_loop, CPython's JSON encoder from
json_roundtrip), on top of a common base (hotspots), so a fleet advisor has
something to find and services to name.

From tests:   windows(hosts=4, services=3, count=2)  -> an iterator of model.fleet.Window
From a shell: python bench/fleet_sim.py --hosts 200 --services 6 --windows 5
              (starts a collector on a free port with a scratch store, or --server URL)
It prints the ingest throughput: samples per second per collector CPU-second.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from perfsleuth.formats import perf_data
from perfsleuth.formats.wire import window_pprof
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread

ROOT = Path(__file__).resolve().parents[1]
STACKS = Path(__file__).with_name("fleet_sim_stacks.json")
EXAMPLES = ROOT / "examples"
# program -> the command recorded for it
PROGRAMS = {
    "hotspots": [str(EXAMPLES / "bin" / "hotspots"), "300000000"],
    "map_alloc": [str(EXAMPLES / "bin" / "map_alloc"), "3000"],
    "zlib_loop": [str(EXAMPLES / "bin" / "zlib_loop"), "12"],
    "json_roundtrip": [sys.executable, str(EXAMPLES / "advisor" / "json_roundtrip.py"), "120"],
}
# The planted hot spot of each service, in turn; every service also runs hotspots.
PLANTED = ("map_alloc", "zlib_loop", "json_roundtrip")
PLANTED_SHARE = 0.4
KEEP_STACKS = 300


# -- recording the stacks (once) ------------------------------------------------


def record_stacks(out: Path = STACKS) -> None:
    """Profile each program with perf and keep its most frequent stacks, root first."""
    kept = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in PROGRAMS.items():
            data = Path(tmp) / f"{name}.data"
            perf = ["perf", "record", "-q", "-F", "499", "--call-graph", "dwarf", "-o", str(data)]
            subprocess.run([*perf, "--", *cmd], check=True, stdout=subprocess.DEVNULL)
            profile = perf_data.read(data)
            counts: Counter[tuple[tuple[str, str], ...]] = Counter()
            for stack, _w, count, _t, _s in profile.rows():
                frames = [
                    profile.frames[f] for f in reversed(stack) if not profile.frames[f].inlined
                ]
                counts[tuple((f.function, f.dso) for f in frames)] += count
            kept[name] = [[list(map(list, s)), n] for s, n in counts.most_common(KEEP_STACKS)]
            print(f"{name}: {sum(counts.values())} samples, kept {len(kept[name])} stacks")
    out.write_text(json.dumps(kept, indent=0) + "\n")


# -- generating windows ---------------------------------------------------------


@dataclass(frozen=True)
class Program:
    name: str
    stacks: list[list[Frame]]  # leaf first
    weights: list[int]


def load_programs(path: Path = STACKS) -> dict[str, Program]:
    data = json.loads(path.read_text())
    return {
        name: Program(
            name,
            [[Frame(fn, dso=dso) for fn, dso in reversed(stack)] for stack, _ in rows],
            [n for _, n in rows],
        )
        for name, rows in data.items()
    }


def service_mix(index: int) -> dict[str, float]:
    """The programs service `index` runs and their shares of its CPU time."""
    return {PLANTED[index % len(PLANTED)]: PLANTED_SHARE, "hotspots": 1 - PLANTED_SHARE}


def service_name(index: int) -> str:
    return f"svc-{index}-{PLANTED[index % len(PLANTED)].split('_')[0]}"


def windows(
    hosts: int,
    services: int,
    count: int,
    *,
    window_s: float = 10.0,
    cpus: int = 8,
    rate_hz: float = 19.0,
    busy: float = 0.6,
    start: float | None = None,
    seed: int = 1,
) -> Iterator[Window]:
    """`count` consecutive windows of every host; host h runs service h % services."""
    rng = random.Random(seed)
    programs = load_programs()
    start = time.time() - count * window_s if start is None else start
    per_window = round(rate_hz * cpus * window_s * busy)
    for w in range(count):
        begin = start + w * window_s
        for h in range(hosts):
            yield _window(programs, h, h % services, begin, window_s, per_window, rate_hz, rng)


def _window(
    programs: dict[str, Program],
    host: int,
    service: int,
    begin: float,
    window_s: float,
    samples: int,
    rate_hz: float,
    rng: random.Random,
) -> Window:
    builder = ProfileBuilder(unit="samples")
    processes = {}
    for n, (name, share) in enumerate(service_mix(service).items()):
        program = programs[name]
        pid = 1000 + n
        thread = Thread(tid=pid, pid=pid, name=name[:15])
        processes[pid] = Process(
            exe=f"/usr/bin/{name}", build_id=hashlib.sha1(name.encode()).hexdigest()
        )
        drawn = Counter(
            rng.choices(range(len(program.stacks)), program.weights, k=round(samples * share))
        )
        for index, times in drawn.items():
            builder.add(program.stacks[index], times, count=times, thread=thread)
    return Window(
        id=f"sim-h{host}-{int(begin * 1000)}",
        start=begin,
        end=begin + window_s,
        profile=builder.build(),
        labels={"host": f"sim-host-{host}", "service": service_name(service)},
        processes=processes,
        rate_hz=rate_hz,
    )


# -- pushing --------------------------------------------------------------------


def push(server: str, body: bytes, query: dict, window_id: str, token: str | None) -> None:
    headers = {"X-Perfsleuth-Window": window_id, "Content-Type": "application/octet-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    url = f"{server.rstrip('/')}/ingest?{urlencode(query)}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=60) as resp:
        resp.read()


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_collector(store: Path, token: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).parent / "perfsleuth"
    cmd = [str(exe), "collector", "--listen", f"127.0.0.1:{port}", "--store", str(store)]
    proc = subprocess.Popen([*cmd, "--token", token], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the collector did not start")


def bench(args: argparse.Namespace) -> None:
    made = list(windows(args.hosts, args.services, args.windows, cpus=args.cpus))
    bodies = [(window_pprof.encode(w), window_pprof.query(w), w.id) for w in made]
    samples = sum(w.profile.num_samples for w in made)
    size = sum(len(b) for b, _, _ in bodies)
    print(
        f"{len(made)} windows of {args.hosts} hosts x {args.cpus} CPUs, {args.services} services: "
        f"{samples:,} samples, {size / len(made) / 1024:.1f} KiB a window"
    )
    with tempfile.TemporaryDirectory() as tmp:
        collector, server = (None, args.server)
        if server is None:
            collector, server = start_collector(Path(tmp) / "fleet", args.token)
        try:
            before = cpu_seconds(collector.pid) if collector else 0.0
            began = time.monotonic()
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(lambda b: push(server, b[0], b[1], b[2], args.token), bodies))
            wall = time.monotonic() - began
            used = cpu_seconds(collector.pid) - before if collector else 0.0
        finally:
            if collector:
                collector.send_signal(signal.SIGTERM)
                collector.wait(30)
    print(f"ingest: {samples / wall:,.0f} samples/s over {wall:.1f} s wall")
    if used:
        print(f"collector CPU {used:.1f} s: {samples / used:,.0f} samples/s per collector core")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--record", action="store_true", help="re-record the stacks (needs perf)")
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--services", type=int, default=6)
    parser.add_argument("--windows", type=int, default=3, help="windows per host")
    parser.add_argument("--cpus", type=int, default=8, help="CPUs per simulated host")
    parser.add_argument("--clients", type=int, default=4, help="concurrent pushes")
    parser.add_argument("--server", help="a running collector (default: start one)")
    parser.add_argument("--token", default="fleet-sim")
    args = parser.parse_args()
    if args.record:
        record_stacks()
    else:
        bench(args)


if __name__ == "__main__":
    main()
