"""`perfsleuth serve` under a burst of requests and a slowloris (issue 19 item 10).

Serves a small store (tests/uistore.py) on 127.0.0.1 at a free port, then:
- CONCURRENT threads send GET /api/runs at once: p50/p99 latency, how many answered
  within TIMEOUT_S;
- HALF_OPEN connections each send part of a request line and are held; meanwhile a
  new GET /api/runs is timed, and the server's open sockets (/proc/PID/fd) counted;
- the server's stderr, read to the end after it stops, must hold no traceback.

Usage: .venv/bin/python bench/server_load.py [--concurrent N] [--half-open N]
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "perfsleuth.cli"]
PATH = "/api/runs"
TIMEOUT_S = 20.0
PARTIAL = b"GET /api/ru"  # a request line never finished
NEW_REQUESTS = 5  # timed while the half-open connections are held


def make_store(base: Path) -> Path:
    """The UI tests' store (tests/uistore.py): two small runs."""
    spec = importlib.util.spec_from_file_location("uistore", ROOT / "tests" / "uistore.py")
    assert spec is not None and spec.loader is not None
    uistore = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(uistore)
    uistore.make_store(base)
    return base / "store"


class Server:
    """`perfsleuth serve --port 0` over STORE; its stderr kept line by line."""

    def __init__(self, store: Path) -> None:
        argv = [*CLI, "serve", "--store", str(store), "--port", "0", "--host", "127.0.0.1"]
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        self.lines: list[str] = []
        self.port = self._port_from(self.proc.stderr)
        self._reader = threading.Thread(target=self.lines.extend, args=(self.proc.stderr,))
        self._reader.start()

    def _port_from(self, stderr: IO[str]) -> int:
        for line in stderr:
            self.lines.append(line)
            match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if match:
                return int(match.group(1))
        raise SystemExit(f"perfsleuth serve printed no URL: {''.join(self.lines)}")

    def sockets(self) -> int:
        fds = Path(f"/proc/{self.proc.pid}/fd")
        return sum(os.readlink(fd).startswith("socket:") for fd in fds.iterdir())

    def stop(self) -> int:
        self.proc.terminate()
        status = self.proc.wait(timeout=30)
        self._reader.join()
        return status

    def tracebacks(self) -> int:
        return sum("Traceback" in line for line in self.lines)


def timed_get(port: int) -> float | None:
    """ms to a 200 answer to GET /api/runs, None when none came within TIMEOUT_S."""
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    start = time.perf_counter()
    try:
        con.request("GET", PATH)
        response = con.getresponse()
        response.read()
        return (time.perf_counter() - start) * 1000 if response.status == 200 else None
    except OSError:
        return None
    finally:
        con.close()


def concurrent_gets(port: int, n: int) -> list[float | None]:
    """N threads released together, each sending one GET."""
    results: list[float | None] = [None] * n
    barrier = threading.Barrier(n)

    def one(i: int) -> None:
        barrier.wait()
        results[i] = timed_get(port)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def open_half(port: int, n: int) -> list[socket.socket]:
    """N connections that each sent part of a request line and wait."""
    held = []
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        sock.sendall(PARTIAL)
        held.append(sock)
    return held


def closed_by_server(held: list[socket.socket]) -> int:
    """How many of the held connections the server has closed (EOF or reset)."""
    closed = 0
    for sock in held:
        sock.setblocking(False)
        try:
            closed += sock.recv(1) == b""
        except BlockingIOError:
            continue
        except OSError:
            closed += 1
    return closed


def burst(server: Server, n: int) -> list[tuple[str, str]]:
    results = concurrent_gets(server.port, n)
    answered = [ms for ms in results if ms is not None]
    p50, p99 = percentile(answered, 0.5), percentile(answered, 0.99)
    return [
        (f"{n} concurrent GET {PATH}: answered within {TIMEOUT_S:.0f} s", f"{len(answered)}/{n}"),
        ("  p50 / p99 latency", f"{p50:.0f} / {p99:.0f} ms"),
    ]


def slowloris(server: Server, n: int) -> list[tuple[str, str]]:
    held = open_half(server.port, n)
    try:
        time.sleep(1.0)  # for the server to take them in
        new = [timed_get(server.port) for _ in range(NEW_REQUESTS)]
        sockets = server.sockets()
        closed = closed_by_server(held)
    finally:
        for sock in held:
            sock.close()
    answered = [ms for ms in new if ms is not None]
    worst = max(answered, default=float("nan"))
    return [
        (f"{n} half-open connections held: new GET answered", f"{len(answered)}/{NEW_REQUESTS}"),
        ("  slowest new GET", f"{worst:.0f} ms"),
        ("  server's open sockets meanwhile", str(sockets)),
        ("  half-open connections the server closed", f"{closed}/{n}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--half-open", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfsleuth-load-") as base:
        server = Server(make_store(Path(base)))
        try:
            rows = burst(server, args.concurrent) + slowloris(server, args.half_open)
            time.sleep(1.0)  # disconnects logged, if any
            rows.append(("server's open sockets once they dropped", str(server.sockets())))
        finally:
            status = server.stop()
    rows.append(("tracebacks on the server's stderr", str(server.tracebacks())))
    rows.append(("server's exit status after SIGTERM", str(status)))
    width = max(len(what) for what, _ in rows)
    for what, value in rows:
        print(f"{what:<{width}}  {value}")


if __name__ == "__main__":
    main()
