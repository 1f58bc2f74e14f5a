"""Ingest cost of pushes: samples stored per collector CPU-second, by kind of push.

Kinds: the simulated fleet's windows (bench/fleet_sim.py: 8-CPU hosts, 10 s windows of
real stacks, 912 samples each; `--hosts` 200 x 3 windows are the 547,200 samples issue
27 pushed to Grafana Pyroscope) as gzipped pprof and as folded text to /ingest, and
pushes captured from the real SDKs (tests/fixtures/pyroscope/: pyroscope-go v1.5.0's
CPU push to /ingest, multipart, from/until in ns; pyroscope-io 1.4.0's Connect push;
the Java agent 2.9.2's /ingest?format=jfr push, a 3 s JFR recording with its labels;
the OpenTelemetry Collector v0.165.0's otlphttp export of pyroscope-go's CPU profile
(gzipped as it came, sent inflated),
sent over HTTP to /v1development/profiles and as gRPC, ProfilesService/Export, to the
collector's one port (HTTP/2 spliced to its gRPC server) and to its --grpc port, each
client thread keeping its gRPC channel as the OTel exporter does), each SDK push made
distinct by shifting its profile's time (so none is a duplicate; the Java push by its
from/until alone). No Pyroscope number is known for JFR or OTLP pushes.
Each kind goes from a few client threads to a fresh collector on a scratch store, each
push on a new connection, as the agent sends them and as the SDKs' pushes arrive (they
push every 10 s or so, and the collector closes a connection idle for 5 s);
`--keep-alive` keeps each client's connection open instead. The
collector's CPU time is its rusage from the first push until it exited (its head's
flush to Parquet included), its samples from /metrics. Grafana Pyroscope cannot be
built on this machine: the ratio is against its cost measured elsewhere on the
simulated fleet's pushes (issue 27: 474,000 samples per server CPU-second for pprof,
515,000 for folded).

`--src DIR` (repeatable) runs a checkout's code (`git archive main src | tar -x -C
/tmp/main` then `--src /tmp/main/src`); with several, each round measures each in turn
(interleaved), and the medians over `--rounds` are printed. `--together` runs them side
by side instead: every push goes to each one's collector in turn, so they meet the same
load (on this shared machine, runs one after the other differed by 10-20%).

    .venv/bin/python bench/ingest_clients.py --pushes 200 --hosts 200 --rounds 3
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import grpc
from fleet_sim import windows
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceRequest,
)

from perfsleuth.formats import profile_pb2
from perfsleuth.formats.wire import push_pb2, window_pprof
from perfsleuth.model.fleet import Window

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "pyroscope"
# Grafana Pyroscope v2.2.1 on the simulated fleet's pushes (issue 27), samples per server
# CPU-second.
PYROSCOPE = {"pprof": 474_000, "folded": 515_000}
PERFSLEUTH = Path(sys.executable).parent / "perfsleuth"
GRPC_EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
TICKS = os.sysconf("SC_CLK_TCK")


def shifted(pprof: bytes, seconds: int) -> bytes:
    """A gzipped pprof whose time_nanos is `seconds` later."""
    msg = profile_pb2.Profile.FromString(gzip.decompress(pprof))
    msg.time_nanos += seconds * 10**9
    return gzip.compress(msg.SerializeToString(), compresslevel=1)


def go_pushes(n: int) -> list[tuple[str, bytes, dict]]:
    """pyroscope-go's CPU push, n times, each its pprof and from/until shifted; multipart
    without format=, as the SDK sends it."""
    head = json.loads((FIXTURES / "go-1.5.0-cpu.json").read_text())
    body = (FIXTURES / "go-1.5.0-cpu.bin").read_bytes()
    form = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {head['content-type']}\r\n\r\n".encode() + body
    )
    [part] = [p for p in form.iter_parts() if p.get_param("name", header="content-disposition")]
    profile = part.get_payload(decode=True)
    query = dict(parse_qsl(urlsplit(head["path"]).query))
    pushes = []
    for i in range(n):
        data = body.replace(profile, shifted(profile, i))  # the SDK's own form otherwise
        headers = {"Content-Type": head["content-type"]}
        pushes.append(("/ingest?" + urlencode(later(query, i * 10**9)), data, headers))
    return pushes


def later(query: dict[str, str], by: int) -> dict[str, str]:
    """The query with its from and until `by` (in their unit) later."""
    return {**query, "from": str(int(query["from"]) + by), "until": str(int(query["until"]) + by)}


def java_pushes(n: int) -> list[tuple[str, bytes, dict]]:
    """The Java agent's JFR push, n times, from/until (seconds) shifted: the window ids
    differ by the query, the recording is the captured one."""
    head = json.loads((FIXTURES / "java-2.9.2-jfr.json").read_text())
    body = (FIXTURES / "java-2.9.2-jfr.bin").read_bytes()
    query = dict(parse_qsl(urlsplit(head["path"]).query))
    headers = {"Content-Type": head["content_type"]}
    return [("/ingest?" + urlencode(later(query, i)), body, headers) for i in range(n)]


def connect_pushes(n: int) -> list[tuple[str, bytes, dict]]:
    """pyroscope-io 1.4.0's Connect push, n times, each profile's time shifted."""
    request = push_pb2.PushRequest.FromString(
        gzip.decompress((FIXTURES / "push-python-1.4.0.bin.gz").read_bytes())
    )
    pushes = []
    for i in range(n):
        copy = push_pb2.PushRequest()
        copy.CopyFrom(request)
        for series in copy.series:
            for sample in series.samples:
                raw = profile_pb2.Profile.FromString(sample.raw_profile)
                raw.time_nanos += i * 10**9
                sample.raw_profile = raw.SerializeToString()
        headers = {"Content-Type": "application/proto", "Content-Encoding": "gzip"}
        body = gzip.compress(copy.SerializeToString(), compresslevel=1)
        pushes.append(("/push.v1.PusherService/Push", body, headers))
    return pushes


def otlp_pushes(n: int, path: str) -> list[tuple[str, bytes, dict]]:
    """The OTel Collector's captured OTLP export, n times, each profile's time shifted,
    to `path` (the HTTP route, or GRPC_EXPORT for a gRPC call)."""
    request = ExportProfilesServiceRequest.FromString(
        gzip.decompress((FIXTURES / "otelcol-0.165.0-proto.bin").read_bytes())
    )
    pushes = []
    for i in range(n):
        copy = ExportProfilesServiceRequest()
        copy.CopyFrom(request)
        for resource in copy.resource_profiles:
            for scope in resource.scope_profiles:
                for profile in scope.profiles:
                    profile.time_unix_nano += i * 10**9
        headers = {"Content-Type": "application/x-protobuf"}
        pushes.append((path, copy.SerializeToString(), headers))
    return pushes


def fleet_pushes(hosts: int, kind: str) -> list[tuple[str, bytes, dict]]:
    """3 windows of each simulated 8-CPU host, as the agent pushes them (pprof) or as
    folded stacks (root first) to /ingest?format=folded."""
    pushes = []
    for window in windows(hosts, 6, 3, cpus=8):
        query = window_pprof.query(window)
        if kind == "pprof":
            headers = {window_pprof.WINDOW_HEADER: window.id}
            pushes.append((f"/ingest?{urlencode(query)}", window_pprof.encode(window), headers))
        else:
            query["format"] = "folded"
            pushes.append((f"/ingest?{urlencode(query)}", folded(window), {}))
    return pushes


def folded(window: Window) -> bytes:
    profile = window.profile
    lines = [
        ";".join(profile.frames[f].function for f in reversed(stack)) + f" {count}"
        for stack, _weight, count, _thread, _state in profile.rows()
    ]
    return ("\n".join(lines) + "\n").encode()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def stored_samples(url: str) -> int:
    with urllib.request.urlopen(url + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    return int(re.search(r"^perfsleuth_collector_samples_total (\d+)", text, re.M)[1])


def post(url: str, push: tuple[str, bytes, dict]) -> None:
    """A push on a new connection, as the agent (urllib) sends one."""
    path, body, headers = push
    req = urllib.request.Request(url + path, data=body, headers=headers)
    with urllib.request.urlopen(req, timeout=60) as resp:
        resp.read()


_CONNECTIONS = threading.local()


def post_kept(url: str, push: tuple[str, bytes, dict]) -> None:
    """A push on its client thread's open connection (--keep-alive)."""
    path, body, headers = push
    connection = getattr(_CONNECTIONS, url, None)
    if connection is None:
        connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=60)
        setattr(_CONNECTIONS, url, connection)
    connection.request("POST", path, body=body, headers=headers)
    answer = connection.getresponse()
    answer.read()
    if answer.status != 200:
        raise OSError(f"push answered {answer.status}")


_CHANNELS = threading.local()


def call_grpc(url: str, push: tuple[str, bytes, dict]) -> None:
    """A push as a gRPC call on its client thread's channel to `url` (kept, as the OTel
    Collector's exporter keeps its connection); the port is the URL's, or with
    `#grpc=PORT` that one."""
    address = urlsplit(url).netloc
    if "#grpc=" in url:
        address = "127.0.0.1:" + url.rsplit("=", 1)[1]
    channel = getattr(_CHANNELS, address, None)
    if channel is None:
        channel = grpc.insecure_channel(address)
        setattr(_CHANNELS, address, channel)
    path, body, _ = push
    channel.unary_unary(path)(body, timeout=60)


def measure(
    pushes: list[tuple[str, bytes, dict]],
    clients: int,
    srcs: list[Path],
    send: Callable = post,
    grpc_port: bool = False,
) -> list[dict]:
    """For each of `srcs`, a fresh collector's CPU for `pushes` from `clients` threads,
    its head's flush to Parquet when it stops included (its start-up not). With several,
    they run side by side: each push goes to every collector in turn (who is first
    alternates), so all of them meet the same load. `grpc_port`: each collector also
    serves gRPC on a --grpc port, named in its URL as `#grpc=PORT`."""
    load = os.getloadavg()[0]
    with ExitStack() as stack:
        collectors = [stack.enter_context(_collector(src, grpc_port)) for src in srcs]
        cpu0, wall0 = [cpu_seconds(c.pid) for c, _ in collectors], time.monotonic()

        def each(i: int) -> None:
            turn = collectors[i % len(collectors) :] + collectors[: i % len(collectors)]
            for _, url in turn:
                send(url, pushes[i])

        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(each, range(len(pushes))))
        samples = [stored_samples(url.split("#")[0]) for _, url in collectors]
        for collector, _ in collectors:
            collector.send_signal(signal.SIGTERM)
        usages = [os.wait4(c.pid, 0)[2] for c, _ in collectors]
        wall = time.monotonic() - wall0
        stores = [Path(c.args[-1]) for c, _ in collectors]
        flushed = [sum(1 for _ in store.rglob("h-*.parquet")) for store in stores]
    results = []
    for n, usage, before, files in zip(samples, usages, cpu0, flushed, strict=True):
        cpu = usage.ru_utime + usage.ru_stime - before
        results.append(
            {
                "pushes": len(pushes),
                "samples": n,
                "collector_cpu_s": round(cpu, 2),
                "wall_s": round(wall, 2),
                "samples_per_cpu_s": round(n / cpu) if cpu else None,
                "cpu_ms_per_push": round(1000 * cpu / len(pushes), 2),
                "parquet_samples_files": files,
                "load": round(load, 1),
            }
        )
    return results


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _collector(src: Path, grpc_port: bool = False) -> Iterator[tuple[subprocess.Popen, str]]:
    """A collector running `src`'s code on a scratch store, once it answers; killed if
    the caller did not stop it. `grpc_port`: with a --grpc port, `#grpc=PORT` in its URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    extra = []
    if grpc_port:
        extra = ["--grpc", f"127.0.0.1:{_free_port()}"]
    with tempfile.TemporaryDirectory() as store:
        command = [str(PERFSLEUTH), "collector", "--listen", f"127.0.0.1:{port}"]
        command += [*extra, "--store", store]
        collector = subprocess.Popen(command, env=_path_first(src))
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(url + "/healthz", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.1)
            yield collector, url + (f"#grpc={extra[1].rsplit(':', 1)[1]}" if extra else "")
        finally:
            if collector.returncode is None and collector.poll() is None:
                collector.kill()
                collector.wait()


def _path_first(src: Path) -> dict[str, str]:
    """The environment with `src` first on the Python path."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pushes", type=int, default=400, help="of each SDK's push")
    parser.add_argument("--hosts", type=int, default=200, help="simulated hosts, 3 windows each")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kind", action="append", help="only these kinds (repeatable)")
    parser.add_argument("--src", type=Path, action="append", help="code to run (repeatable)")
    parser.add_argument(
        "--keep-alive",
        action="store_true",
        help="each client thread keeps its connection (default: a new one per push)",
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="run the --src collectors side by side, every push sent to each (less noise "
        "from the machine's load than one after the other)",
    )
    args = parser.parse_args()
    makers = {
        "fleet pprof": lambda: fleet_pushes(args.hosts, "pprof"),
        "fleet folded": lambda: fleet_pushes(args.hosts, "folded"),
        "pyroscope-go /ingest": lambda: go_pushes(args.pushes),
        "pyroscope-io Connect": lambda: connect_pushes(args.pushes),
        "java agent jfr": lambda: java_pushes(args.pushes),
        "otlp http": lambda: otlp_pushes(args.pushes, "/v1development/profiles"),
        "otlp grpc one port": lambda: otlp_pushes(args.pushes, GRPC_EXPORT),
        "otlp grpc --grpc port": lambda: otlp_pushes(args.pushes, GRPC_EXPORT),
    }
    kinds = {kind: make() for kind, make in makers.items() if kind in (args.kind or makers)}
    sources = args.src or [ROOT / "src"]
    runs: dict[tuple[str, str], list[dict]] = {}
    send = post_kept if args.keep_alive else post
    groups = [sources] if args.together else [[src] for src in sources]
    for r in range(args.rounds):
        for kind, pushes in kinds.items():
            for group in groups:
                grpc_kind = "grpc" in kind
                how = call_grpc if grpc_kind else send
                results = measure(pushes, args.clients, group, how, "--grpc" in kind)
                for src, result in zip(group, results, strict=True):
                    runs.setdefault((kind, str(src)), []).append(result)
                    line = {"round": r, "kind": kind, "src": str(src), **result}
                    print(json.dumps(line), flush=True)
    for (kind, src), results in runs.items():
        rate = statistics.median(x["samples_per_cpu_s"] for x in results)
        peer = PYROSCOPE["folded" if "folded" in kind else "pprof"]
        per_push = [x["cpu_ms_per_push"] for x in results]
        loads = [x["load"] for x in results]
        known = "jfr" not in kind and "otlp" not in kind
        ratio = f", {rate / peer:.2f}x Pyroscope's {peer:,}" if known else ""
        print(
            f"{kind:22} {src}: median {rate:,.0f} samples per collector CPU-s "
            f"({statistics.median(per_push):.2f} ms a push, {min(per_push):.2f}-"
            f"{max(per_push):.2f} over {len(results)} rounds at load {min(loads):g}-"
            f"{max(loads):g}){ratio}"
        )


if __name__ == "__main__":
    main()
