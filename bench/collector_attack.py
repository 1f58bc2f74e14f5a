"""`perfsleuth collector` under slow connections and decompression bombs (issue 31).

Starts a collector on 127.0.0.1 (token set, default limits) for each case, then:
- slow: HALF_OPEN connections without a token (half a request head each) and SLOWLORIS
  ones dripping a header byte a second are held while a legitimate client pushes
  PUSHES small folded windows: how many were stored, p50/p99 latency (and the same
  without the attack), the collector's open sockets after 2 s and after 12 s;
- bomb: a gzip body (about 250 KB) inflating to 128 MB, sent as a gzipped folded body
  and as Content-Encoding: gzip: the answer, its time and the collector's peak RSS
  (VmHWM) over its idle RSS;
- large: three 30 MB folded bodies at once: the answers and the peak RSS added.

`--src DIR` runs another checkout's code (e.g. the code before this change:
`git archive 7c852d1 src | tar -x -C /tmp/before` then `--src /tmp/before/src`).

Usage: .venv/bin/python bench/collector_attack.py [--src DIR] [--half-open N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from tempfile import TemporaryDirectory
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench"
PUSHES = 20
TIMEOUT_S = 120.0


class Collector:
    def __init__(self, src: Path, store: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(src)}
        argv = [sys.executable, "-m", "perfsleuth.cli", "collector", "--token", TOKEN]
        argv += ["--listen", f"127.0.0.1:{self.port}", "--store", str(store)]
        self.proc = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
        self.pushed = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.post("/healthz", None, {})[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("the collector did not start")

    def post(self, path: str, body: bytes | None, query: dict, headers: dict | None = None):
        url = f"http://127.0.0.1:{self.port}{path}" + ("?" + urlencode(query) if query else "")
        sent = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
        request = urllib.request.Request(url, data=body, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def push(self, body: bytes, headers: dict | None = None) -> tuple[int, bytes]:
        now = int(time.time())
        query = {"name": "bench.cpu{host=h}", "from": now - 10, "until": now}
        return self.post("/ingest", body, query, headers)

    def legit(self) -> tuple[bool, float]:
        """One small new window pushed: (stored, seconds)."""
        self.pushed += 1
        began = time.monotonic()
        try:
            status, answer = self.push(f"main;serve;h{self.pushed} 3\n".encode())
            stored = status == 200 and json.loads(answer)["stored"]
        except OSError:
            stored = False
        return stored, time.monotonic() - began

    def status(self, key: str) -> int:
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(next(ln for ln in text.splitlines() if ln.startswith(key)).split()[1])

    def sockets(self) -> int:
        fds = Path(f"/proc/{self.proc.pid}/fd")
        return sum(os.readlink(fd).startswith("socket:") for fd in fds.iterdir())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@contextmanager
def collector(src: Path) -> Iterator[Collector]:
    with TemporaryDirectory() as tmp:
        running = Collector(src, Path(tmp) / "fleet")
        try:
            yield running
        finally:
            running.stop()


def pushes(c: Collector) -> str:
    results = [c.legit() for _ in range(PUSHES)]
    times = sorted(t for _, t in results)
    p99 = times[min(len(times) - 1, round(0.99 * len(times)))]
    stored = sum(ok for ok, _ in results)
    p50 = statistics.median(times)
    return f"{stored}/{PUSHES} stored, p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms"


def slow(src: Path, half_open: int, slowloris: int) -> None:
    with collector(src) as c:
        print(f"slow: no attack: {pushes(c)}")
        held = [socket.create_connection(("127.0.0.1", c.port)) for _ in range(half_open)]
        for conn in held:
            conn.sendall(b"POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        dripping = [socket.create_connection(("127.0.0.1", c.port)) for _ in range(slowloris)]
        stop = threading.Event()

        def drip() -> None:
            while not stop.wait(1):
                for conn in dripping:
                    with suppress(OSError):
                        conn.sendall(b"X")

        dripper = threading.Thread(target=drip)
        dripper.start()
        try:
            print(f"slow: {half_open} half-open + {slowloris} slowloris held: {pushes(c)}")
            time.sleep(2)
            print(f"slow: collector sockets after 2 s: {c.sockets()}")
            time.sleep(10)
            print(f"slow: collector sockets after 12 s: {c.sockets()}; then {pushes(c)}")
        finally:
            stop.set()
            dripper.join()
            for conn in held + dripping:
                conn.close()


def measured(c: Collector, send: Callable[[], list[tuple[int, bytes]]]) -> str:
    idle = c.status("VmRSS:")
    began = time.monotonic()
    try:
        answers = [
            f"{status} {body.decode(errors='replace').strip()[:70]}" for status, body in send()
        ]
    except OSError as e:
        answers = [f"no answer ({e})"]
    took = time.monotonic() - began
    grown = (c.status("VmHWM:") - idle) / 1024
    return (
        f"{'; '.join(answers)} in {took:.1f} s, peak RSS +{grown:.0f} MB over {idle / 1024:.0f} MB"
    )


def bombs(src: Path) -> None:
    line = b"main;work 1\n"
    bomb = gzip.compress(line * ((128 << 20) // len(line)), compresslevel=9)
    for name, headers in (("gzip body", {}), ("Content-Encoding", {"Content-Encoding": "gzip"})):
        with collector(src) as c:
            result = measured(c, lambda c=c, headers=headers: [c.push(bomb, headers)])
            print(f"bomb ({len(bomb) >> 10} KiB -> 128 MB, {name}): {result}")
    with collector(src) as c:
        big = large_body()

        def three() -> list[tuple[int, bytes]]:
            with ThreadPoolExecutor(3) as pool:
                return list(pool.map(lambda _: c.push(big), range(3)))

        print(f"large (three {len(big) >> 20} MB bodies at once): {measured(c, three)}")
        print(f"large: then {pushes(c)}")


def large_body() -> bytes:
    """30 MB of folded stacks within the frame limits: 18 frames, long C++ names."""
    names = [b"app::Service::method_%02d(int, std::string const&)" % i for i in range(16)]
    frames = b";".join(names)
    body = b"".join(b"main;%s;leaf_%d 1\n" % (frames, i) for i in range(40_000))[: 30 << 20]
    return body[: body.rfind(b"\n") + 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the code to run")
    parser.add_argument("--half-open", type=int, default=300)
    parser.add_argument("--slowloris", type=int, default=80)
    args = parser.parse_args()
    slow(args.src, args.half_open, args.slowloris)
    bombs(args.src)


if __name__ == "__main__":
    main()
