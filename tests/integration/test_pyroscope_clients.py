"""Pyroscope's own SDKs, installed from their registries, push to a real collector over HTTP.

A real program runs under each SDK (tests/clients/); what the collector stored is read
back with `perfsleuth fleet top` and checked against what the program did: its hot
functions in order, its tags as labels (`--where`), its CPU time as the total.
`make setup` installs the SDKs (pyroscope-io 1.4.0 in the virtualenv: it pushes the
Connect API; 0.8.16 under .venv/clients/: it pushes /ingest?format=pprof; pyroscope-otel
1.1.0 there too: it tags samples with OpenTelemetry spans; a Go program built with
pyroscope-go v1.5.0, a pusher on the Connect client of Grafana Alloy's pyroscope.write
(Pyroscope's api module v1.5.0), a Rust program built with the crates.io pyroscope
2.1.5, @pyroscope/nodejs 0.6.4, and the Java agent 2.9.2 with tests/clients/java/
compiled against it, under .venv/clients/).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_collector import PERFSLEUTH, Collector, request, start, stop

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CLIENTS = Path(__file__).resolve().parents[1] / "clients"
INSTALLED = Path(sys.prefix) / "clients"  # beside the virtualenv
PYROSCOPE_IO_08 = INSTALLED / "pyroscope-io-0.8.16"
PYROSCOPE_OTEL = INSTALLED / "pyroscope-otel-1.1.0"
GO_APP = INSTALLED / "go-app"  # tests/clients/go/ built by scripts/install-clients.sh
ALLOY_PUSH = INSTALLED / "alloy-push"  # tests/clients/go/alloy/, the same
RUST_APP = INSTALLED / "rust-app"  # tests/clients/rust/, the same
NODE_MODULES = INSTALLED / "node" / "node_modules"
JAVA = INSTALLED / "java"  # the agent's jar and tests/clients/java/ compiled
JAVA_AGENT = JAVA / "agent-2.9.2.jar"
SECONDS = "5"


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    running = start(tmp_path_factory.mktemp("fleet"))
    yield running
    assert "Traceback" not in stop(running)


def top(collector: Collector, where: str, n: int = 10) -> dict:
    out = subprocess.run(
        [str(PERFSLEUTH), "fleet", "top", "--store", str(collector.store), "--from", "1h"]
        + ["--where", where, "--format", "json", "-n", str(n)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def run_python_app(collector: Collector, app: str, path: str = "", seconds: str = SECONDS) -> int:
    """Run the app under the SDK found first on `path`: its pid."""
    env = {**os.environ, "PYTHONPATH": path}
    argv = [sys.executable, str(CLIENTS / "python_app.py"), collector.url(""), app, seconds]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as app_:
        try:
            out, err = app_.communicate(timeout=120)
        finally:
            app_.kill()
            # pyroscope-io 0.8's agent binds /tmp/PYROSCOPE-<the app's pid>, never removed.
            Path(f"/tmp/PYROSCOPE-{app_.pid}").unlink(missing_ok=True)
    assert app_.returncode == 0, err.decode(errors="replace")
    return int(out.split()[-1])


def check_python_app(collector: Collector, app: str, pid: int) -> None:
    every = top(collector, f"service={app}")
    functions = [row["function"] for row in every["rows"]]
    assert functions[:2] == ["hot_a", "hot_b"], functions
    assert every["rows"][0]["self"] + every["rows"][1]["self"] > 0.8
    # py-spy samples at 100 Hz; each 10 ms of CPU time is one sample.
    assert every["samples"] == pytest.approx(every["total"] / 1e7, rel=0.01)
    assert top(collector, f"service={app},team=sre")["total"] == every["total"]
    tagged = top(collector, f"service={app},phase=a")
    assert tagged["rows"][0]["function"] == "hot_a" and tagged["rows"][0]["self"] > 0.8
    # The SDK tags a thread, and py-spy reads the tag apart from the stack: a sample
    # taken as the tag changes may land on the other side.
    assert sum(row["self"] for row in tagged["rows"] if row["function"] == "hot_b") < 0.1
    assert 0 < tagged["total"] < every["total"]
    # report_pid and report_thread_id's text labels are the samples' thread, not labels
    # (a value per process and per thread: a collector refused every push past
    # --max-label-values)
    assert top(collector, f"service={app},pid={pid}")["total"] == every["total"]
    assert top(collector, f"service={app},thread_id=~.+")["total"] == 0


def test_pyroscope_io_1_pushes_the_connect_api(collector: Collector) -> None:
    check_python_app(collector, "py-connect", run_python_app(collector, "py-connect"))
    # Memory: the SDK samples allocations (one per 512 KiB) and scales them, so only
    # where they are is certain, not how many bytes a run of a few seconds shows.
    for kind in ("inuse_space", "alloc_space"):
        memory = top(collector, f"service=py-connect,type={kind}", 50)
        assert memory["unit"] == "bytes" and "hot_a" in functions(memory), kind
    metrics = request(collector.url("/metrics"), None, {})[1].decode()
    assert 'endpoint="connect",result="accepted"' in metrics
    assert 'result="rejected"' not in metrics


def test_pyroscope_io_0_8_pushes_ingest_pprof(collector: Collector) -> None:
    assert (PYROSCOPE_IO_08 / "pyroscope").is_dir(), "make setup installs pyroscope-io 0.8.16"
    # 0.8 pushes at each 10 s of the clock and once more at shutdown(), which does not wait
    # for that last push: on a loaded machine the process may exit before it is sent. 21 s
    # hold at least one whole 10 s window, more than half of the run.
    pid = run_python_app(collector, "py-ingest", str(PYROSCOPE_IO_08), "21")
    check_python_app(collector, "py-ingest", pid)


def test_py_spy_speedscope_file_pushed_as_pyroscope_takes_it(
    collector: Collector, tmp_path: Path
) -> None:
    """py-spy's `record -f speedscope` file sent with /ingest?format=speedscope (a 400
    before): its hot function first, its seconds as the CPU time, the name's labels."""
    out = tmp_path / "profile.json"
    program = "from python_app import hot_a, hot_b\nfor _ in range(60): hot_a(); hot_b()\n"
    env = {**os.environ, "PYTHONPATH": str(CLIENTS)}
    subprocess.run(
        [str(Path(sys.executable).parent / "py-spy"), "record", "-f", "speedscope", "-r", "100",
         "-o", str(out), "--", sys.executable, "-c", program],
        check=True, capture_output=True, timeout=120, env=env,
    )  # fmt: skip
    doc = json.loads(out.read_bytes())
    # the file's own weights (py-spy writes each sample's weight in its unit, seconds):
    # the stored total is the pushed data's, not a timing of anything
    pushed_ns = sum(sum(p["weights"]) for p in doc["profiles"]) * 1e9
    query = {"name": "py-speedscope.cpu{team=sre}", "from": "now-1m", "until": "now"}
    body, json_type = out.read_bytes(), {"Content-Type": "application/json"}
    status, answer = collector.post("/ingest", body, {**query, "format": "speedscope"}, json_type)
    assert status == 200, answer
    every = top(collector, "service=py-speedscope,team=sre")
    assert functions(every)[0] == "hot_a"
    assert every["total"] == pytest.approx(pushed_ns, rel=1e-6)


def test_pyroscope_otel_span_names_are_labels(tmp_path: Path) -> None:
    """pyroscope-otel 1.1.0: span_name kept as a label (it was dropped), span_id and
    trace_id not (a new value per request: with a window per trace, a collector refused
    every push past --max-label-values; 20 here, far fewer than the run's traces)."""
    assert (PYROSCOPE_OTEL / "pyroscope" / "otel").is_dir(), "make setup installs it"
    small = start(tmp_path, "--max-label-values", "20")
    try:
        argv = [sys.executable, str(CLIENTS / "python_otel_app.py"), small.url(""), "py-otel"]
        env = {**os.environ, "PYTHONPATH": str(PYROSCOPE_OTEL)}
        out = subprocess.run([*argv, SECONDS], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert int(out.stdout.split()[-1]) > 20  # root spans, each its own trace
        every = top(small, "service=py-otel")
        # the OTel SDK's own work per span (Span.__init__, ...) takes samples of its own
        assert functions(every)[0] == "hot_a" and "hot_b" in functions(every)[1:4]
        spans = top(small, "service=py-otel,span_name=handle_a")
        assert functions(spans)[0] == "hot_a"
        # py-spy reads the thread's tags apart from its stack, as for tag_wrapper
        assert sum(r["self"] for r in spans["rows"] if r["function"] == "hot_b") < 0.1
        handle_b = top(small, "service=py-otel,span_name=handle_b")["total"]
        assert 0 < handle_b < spans["total"] < every["total"]
        for label in ("trace_id", "span_id"):
            assert top(small, f"service=py-otel,{label}=~.+")["total"] == 0, label
        assert pushes(small) == {"accepted": pushes(small)["accepted"], "rejected": 0}
        assert pushes(small)["accepted"] >= 1
    finally:
        assert "Traceback" not in stop(small)


def run_go_app(collector: Collector, app: str) -> list[float]:
    """CPU seconds, seconds run, bytes hotA allocated."""
    assert GO_APP.exists(), "make setup builds the pyroscope-go program"
    out = subprocess.run(
        [str(GO_APP), collector.url(""), app, SECONDS],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [float(v) for v in out.stdout.split()[-3:]]


def functions(doc: dict) -> list[str]:
    return [row["function"] for row in doc["rows"]]


@pytest.mark.skipif(not shutil.which("go"), reason="Go is not installed (needed for pyroscope-go)")
def test_pyroscope_go_pushes_every_profile_type(collector: Collector) -> None:
    """pyroscope-go v1.5.0: /ingest with from/until in ns, multipart without format=,
    and CPU, heap, mutex, block and goroutine profiles, each stored as its own type."""
    *_, allocated = run_go_app(collector, "go-app")
    cpu = top(collector, "service=go-app")
    # Go preempts a long loop at a safe point: runtime.asyncPreempt is a leaf of both,
    # and on a loaded machine (preempted more often) it can take more self time than either.
    own = [f for f in functions(cpu) if f != "runtime.asyncPreempt"]
    assert own[0] == "main.hotA" and "main.hotB" in own[1:4]
    assert cpu["samples"] == pytest.approx(cpu["total"] / 1e7, rel=0.01)  # 100 Hz
    assert top(collector, "service=go-app,team=sre")["total"] == cpu["total"]
    tagged = top(collector, "service=go-app,phase=a")
    assert functions(tagged)[0] == "main.hotA" and "main.hotB" not in functions(tagged)
    alloc = top(collector, "service=go-app,type=alloc_space")
    assert alloc["unit"] == "bytes" and functions(alloc)[0] == "main.hotA"
    # Go samples one allocation per 512 KiB and scales it up: an estimate of what ran.
    assert allocated / 3 <= alloc["total"] <= allocated * 3
    for kind in ("alloc_objects", "inuse_objects", "inuse_space", "goroutines"):
        assert top(collector, f"service=go-app,type={kind}")["total"] > 0, kind
    block = top(collector, "service=go-app,type=block_delay", 50)
    assert block["unit"] == "ns" and "main.waitLock" in functions(block)
    mutex = top(collector, "service=go-app,type=mutex_contentions", 50)
    assert mutex["unit"] == "count" and "main.holdLock" in functions(mutex)
    metrics = request(collector.url("/metrics"), None, {})[1].decode()
    assert 'endpoint="ingest",result="rejected"' not in metrics


def run_alloy_push(
    collector: Collector,
    password: str,
    *args: str,
    protocol: str = "",
    service: str = "alloy-app",
) -> list[str]:
    """tests/clients/go/alloy/ with basic auth's `password` (and the Connect client's
    `protocol`): what it printed."""
    assert ALLOY_PUSH.exists(), "make setup builds the Alloy-style pusher"
    out = subprocess.run(
        [str(ALLOY_PUSH), collector.url(""), service, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ALLOY_PASSWORD": password, "CONNECT_PROTOCOL": protocol},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_alloy_pyroscope_write_pushes_the_connect_api(tmp_path: Path) -> None:
    """What Grafana Alloy's pyroscope.scrape and pyroscope.write push, on pyroscope.write's
    client (pushv1connect with its options: Connect and protobuf over HTTP/1.1, basic
    auth, X-Scope-OrgID): process_cpu as recorded, memory as Alloy's own deltas
    (__delta__ false), the target's labels, each total exactly what was pushed."""
    secured = start(tmp_path, "--token", "s3cret")
    try:
        cpu_ns, alloc_bytes, sent = (int(v) for v in run_alloy_push(secured, "s3cret", "3"))
        cpu = top(secured, "service=alloy-app")
        assert cpu["type"] == "cpu" and cpu["unit"] == "ns"
        own = [f for f in functions(cpu) if f != "runtime.asyncPreempt"]  # as for go-app
        assert own[0] == "main.hotA" and "main.hotB" in own[1:4]
        assert cpu["total"] == cpu_ns > 0
        target = "job=pyroscope.scrape.default,instance=127.0.0.1:6060,cluster=test"
        scope = "otel.scope.name=com.grafana.alloy/pyroscope.scrape"
        assert top(secured, f"service=alloy-app,{target},{scope}")["total"] == cpu_ns
        tagged = top(secured, "service=alloy-app,phase=a")  # the pprof's own sample labels
        assert functions(tagged)[0] == "main.hotA" and 0 < tagged["total"] < cpu_ns
        alloc = top(secured, "service=alloy-app,type=alloc_space")
        assert alloc["unit"] == "bytes" and functions(alloc)[0] == "main.hotA"
        assert alloc["total"] == alloc_bytes > 0  # Alloy's deltas, not taken again
        assert top(secured, "service=alloy-app,type=inuse_space")["total"] > 0
        # pyroscope.write retries a push answered unknown, internal or unavailable (up to
        # 10 times, 5 min apart) and drops one refused for what it is
        assert run_alloy_push(secured, "s3cret", "bad") == ["invalid_argument"]
        assert run_alloy_push(secured, "wrong", "bad") == ["unauthenticated"]
        counts = pushes(secured, token="s3cret")
        assert counts == {"accepted": sent, "rejected": 1}, counts
    finally:
        assert "Traceback" not in stop(secured)


@pytest.mark.parametrize("protocol", ["grpc", "grpcweb", "json"])
def test_the_connect_client_pushes_with_its_other_protocols(tmp_path: Path, protocol: str) -> None:
    """The same pushv1connect client made with connect.WithGRPC() (HTTP/2 without TLS, to
    the collector's one port, as to Pyroscope's), connect.WithGRPCWeb() (gRPC-Web over
    HTTP/1.1) or connect.WithProtoJSON() (the Connect protocol's JSON codec): each total
    exactly what was pushed, refusals by their Connect code."""
    secured = start(tmp_path, "--token", "s3cret")
    service = f"alloy-{protocol}"
    try:
        pushed = run_alloy_push(secured, "s3cret", "1", protocol=protocol, service=service)
        cpu_ns, alloc_bytes, _ = (int(v) for v in pushed)
        assert top(secured, f"service={service}")["total"] == cpu_ns > 0
        alloc = top(secured, f"service={service},type=alloc_space")
        assert alloc["total"] == alloc_bytes > 0
        for password, code in (("s3cret", "invalid_argument"), ("wrong", "unauthenticated")):
            refused = run_alloy_push(secured, password, "bad", protocol=protocol)
            assert refused == [code]
    finally:
        assert "Traceback" not in stop(secured)


def test_pyroscope_rust_pushes_the_connect_api(collector: Collector) -> None:
    """crates.io pyroscope 2.1.5 and its pprof-rs backend: Connect, `process_cpu` in CPU
    ns, names demangled by the SDK (`crate::function`), tag_wrapper tags per sample."""
    assert RUST_APP.exists(), "make setup builds the Pyroscope Rust SDK program"
    before = pushes(collector)
    out = subprocess.run(
        [str(RUST_APP), collector.url(""), "rust-app", SECONDS],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loop_cpu, _, process_cpu = (float(v) for v in out.stdout.split()[-3:])
    cpu = top(collector, "service=rust-app")
    assert cpu["type"] == "cpu" and cpu["unit"] == "ns"
    # The SDK's own work (a report at each tag change) takes a few samples of its own.
    assert functions(cpu)[0] == "rust_app::hot_a" and "rust_app::hot_b" in functions(cpu)[1:4]
    assert cpu["samples"] == pytest.approx(cpu["total"] / 1e7, rel=0.01)  # 100 Hz
    # pprof-rs samples the process' CPU time (ITIMER_PROF, which counts the kernel's
    # ticks: 4.4% above getrusage's time at load 14), and drops a sample due while the
    # SDK builds a report (the stored total is the pushes' own: test_pyroscope_push.py).
    assert 0.7 * loop_cpu * 1e9 <= cpu["total"] <= 1.3 * process_cpu * 1e9
    for where in ("team=sre", "process.runtime.name=rust"):
        assert top(collector, f"service=rust-app,{where}")["total"] == cpu["total"], where
    tagged = top(collector, "service=rust-app,phase=a", 50)
    assert functions(tagged)[0] == "rust_app::hot_a" and "rust_app::hot_b" not in functions(tagged)
    assert 0 < tagged["total"] < cpu["total"]
    after = pushes(collector)
    assert after["accepted"] - before["accepted"] >= 2  # one per 2 s and the last one
    assert after["rejected"] == before["rejected"]  # this test's pushes, not earlier ones


def pushes(collector: Collector, endpoint: str = "connect", token: str = "") -> dict[str, int]:
    """The collector's pushes to `endpoint` (connect, ingest) by result."""
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    metrics = request(collector.url("/metrics"), None, auth)[1].decode()
    counters = dict(line.rsplit(" ", 1) for line in metrics.splitlines() if line[:1] != "#")
    name = f'perfsleuth_collector_pushes_total{{endpoint="{endpoint}",result="%s"}}'
    return {result: int(counters.get(name % result, 0)) for result in ("accepted", "rejected")}


def js_functions(doc: dict) -> list[str]:
    """Function names as the Node SDK writes them, `./FILE:NAME:LINE`, without file and line."""
    return [name.split(":")[-2] if name.count(":") >= 2 else name for name in functions(doc)]


@pytest.mark.skipif(not shutil.which("node"), reason="Node is not installed")
def test_pyroscope_nodejs_pushes_wall_and_heap(collector: Collector) -> None:
    """@pyroscope/nodejs 0.6.4: a wall-clock profile, stored as wall time with the
    profile's own period (not the query's sampleRate), and a heap profile."""
    assert (NODE_MODULES / "@pyroscope" / "nodejs").is_dir(), "make setup installs it"
    subprocess.run(
        ["node", str(CLIENTS / "node" / "app.js"), collector.url(""), "node-app", SECONDS],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
    )
    wall = top(collector, "service=node-app,type=wall")
    assert js_functions(wall)[0] == "hotA" and "hotB" in js_functions(wall)
    # One thread sampled for its wall-clock time: a sample weighs about the profile's own
    # period (10 ms) in ns, not the query's sampleRate (a unit error is 1000x off)
    assert wall["samples"] > 0 and 5e6 <= wall["total"] / wall["samples"] <= 2e7
    assert top(collector, "service=node-app,team=sre,type=wall")["total"] == wall["total"]
    tagged = top(collector, "service=node-app,phase=a,type=wall")
    assert js_functions(tagged)[0] == "hotA" and "hotB" not in js_functions(tagged)
    assert top(collector, "service=node-app")["total"] == 0  # no CPU profile was sent
    heap = top(collector, "service=node-app,type=inuse_space", 50)
    assert heap["unit"] == "bytes" and heap["total"] > 0
    assert top(collector, "service=node-app,type=inuse_objects")["total"] > 0


@pytest.mark.skipif(not shutil.which("node"), reason="Node is not installed")
def test_pyroscope_nodejs_wall_profile_with_cpu_time(collector: Collector) -> None:
    """@pyroscope/nodejs 0.6.4 with wall: {collectCpuTime: true}: one pprof holds the
    samples' wall and CPU time, stored as both types (the CPU time was dropped)."""
    assert (NODE_MODULES / "@pyroscope" / "nodejs").is_dir(), "make setup installs it"
    out = subprocess.run(
        ["node", str(CLIENTS / "node" / "app.js"), collector.url(""), "node-cpu", SECONDS, "cpu"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
    )
    loop_cpu, profiled_s, process_cpu = (float(v) for v in out.stdout.split()[-3:])
    cpu = top(collector, "service=node-cpu")
    assert cpu["type"] == "cpu" and cpu["unit"] == "ns"
    assert js_functions(cpu)[0] == "hotA" and "hotB" in js_functions(cpu)
    # V8 reads the process's CPU time at each sample (its other threads' as `(Non JS
    # threads activity)`): from the SDK's start to its stop, within the process's own
    assert 0.5 * loop_cpu * 1e9 <= cpu["total"] <= 1.05 * process_cpu * 1e9
    tagged = top(collector, "service=node-cpu,phase=a")
    assert js_functions(tagged)[0] == "hotA" and "hotB" not in js_functions(tagged)
    wall = top(collector, "service=node-cpu,type=wall")
    # the JS thread's wall-clock time, within the time the SDK sampled (not more than the
    # CPU time: V8's other threads count in that, so on an idle machine it may be more)
    assert js_functions(wall)[0] == "hotA"
    assert 0.5 * float(SECONDS) * 1e9 <= wall["total"] <= 1.05 * profiled_s * 1e9


@pytest.mark.skipif(not shutil.which("java"), reason="Java is not installed")
def test_pyroscope_java_agent_pushes_jfr(collector: Collector, tmp_path: Path) -> None:
    """io.pyroscope:agent 2.9.2: /ingest?format=jfr, a JFR recording by async-profiler
    (CPU by itimer, allocations and the live ones, monitor and ReentrantLock contention)
    with its labels part."""
    assert JAVA_AGENT.exists() and (JAVA / "classes" / "App.class").exists(), "make setup"
    env = {
        **os.environ,
        "PYROSCOPE_SERVER_ADDRESS": collector.url(""),
        "PYROSCOPE_APPLICATION_NAME": "java-app",
        "PYROSCOPE_LABELS": "team=sre",
        "PYROSCOPE_UPLOAD_INTERVAL": "2s",  # it sends nothing of the last interval at exit
        "PYROSCOPE_PROFILER_EVENT": "itimer",
        "PYROSCOPE_PROFILER_ALLOC": "256k",
        "PYROSCOPE_ALLOC_LIVE": "true",  # the sampled allocations still alive: in use
        "PYROSCOPE_PROFILER_LOCK": "1ms",
        "PYROSCOPE_TMP_DIR": str(tmp_path),  # where it unpacks async-profiler, left behind
    }
    jvm = ["java", f"-Djava.io.tmpdir={tmp_path}", "-XX:-UsePerfData"]
    argv = [*jvm, f"-javaagent:{JAVA_AGENT}", "-cp", str(JAVA / "classes"), "App", "8"]
    before = pushes(collector, "ingest")
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    cpu = top(collector, "service=java-app")
    # the JVM's own threads (JIT, GC) take some samples too; the program's two are first
    assert functions(cpu)[0] == "App.hotA" and "App.hotB" in functions(cpu)[1:4]
    assert cpu["samples"] == pytest.approx(cpu["total"] / 1e7, rel=0.01)  # 100 Hz
    assert top(collector, "service=java-app,team=sre")["total"] == cpu["total"]
    tagged = top(collector, "service=java-app,phase=a")
    assert functions(tagged)[0] == "App.hotA" and "App.hotB" not in functions(tagged)
    assert 0 < tagged["total"] < cpu["total"]
    alloc = top(collector, "service=java-app,type=alloc_space")
    assert alloc["unit"] == "bytes" and functions(alloc)[0] == "App.allocate"
    objects = top(collector, "service=java-app,type=alloc_objects")
    # an allocation event stands for the bytes of its TLAB (the program's are 64 KiB arrays)
    assert objects["unit"] == "count" and alloc["total"] > objects["total"] * 1024 > 0
    live = top(collector, "service=java-app,type=inuse_space")
    assert live["unit"] == "bytes" and functions(live)[0] == "App.allocate"
    assert 0 < live["total"] < alloc["total"]
    assert top(collector, "service=java-app,type=inuse_objects")["total"] > 0
    contentions = top(collector, "service=java-app,type=mutex_contentions", 50)
    assert contentions["unit"] == "count" and "App.holdLock" in functions(contentions)
    delay = top(collector, "service=java-app,type=mutex_delay", 50)
    assert delay["unit"] == "ns" and functions(delay)[0] == "App.holdLock"
    assert delay["total"] > contentions["total"] > 0  # ns waited, not a count again
    # a ReentrantLock's waiters park (jdk.ThreadPark): block contentions and delay
    block = top(collector, "service=java-app,type=block_delay", 50)
    assert block["unit"] == "ns" and "App.holdParked" in functions(block)
    assert top(collector, "service=java-app,type=block_contentions")["total"] > 0
    after = pushes(collector, "ingest")  # this test's, whatever earlier ones sent
    assert after["accepted"] - before["accepted"] >= 2  # one per 2 s of the 8
    assert after["rejected"] == before["rejected"]
