"""Pyroscope's own SDKs, installed from their registries, push to a real collector over HTTP.

A real program runs under each SDK (tests/clients/); what the collector stored is read
back with `perfsleuth fleet top` and checked against what the program did: its hot
functions in order, its tags as labels (`--where`), its CPU time as the total.
`make setup` installs the SDKs (pyroscope-io 1.4.0 in the virtualenv: it pushes the
Connect API; 0.8.16 under .venv/clients/: it pushes /ingest?format=pprof).
"""

from __future__ import annotations

import json
import os
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
SECONDS = "5"


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    running = start(tmp_path_factory.mktemp("fleet"))
    yield running
    assert "Traceback" not in stop(running)


def top(collector: Collector, where: str) -> dict:
    out = subprocess.run(
        [str(PERFSLEUTH), "fleet", "top", "--store", str(collector.store), "--from", "1h"]
        + ["--where", where, "--format", "json", "-n", "10"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def run_python_app(collector: Collector, app: str, path: str = "") -> tuple[float, float]:
    """The app's CPU seconds and seconds it ran; it ran under the SDK found first on `path`."""
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [sys.executable, str(CLIENTS / "python_app.py"), collector.url(""), app, SECONDS],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    )
    cpu_s, wall_s = out.stdout.split()[-2:]
    return float(cpu_s), float(wall_s)


def check_python_app(collector: Collector, app: str, cpu_s: float, wall_s: float) -> None:
    every = top(collector, f"service={app}")
    functions = [row["function"] for row in every["rows"]]
    assert functions[:2] == ["hot_a", "hot_b"], functions
    assert every["rows"][0]["self"] + every["rows"][1]["self"] > 0.8
    # py-spy samples at 100 Hz; each 10 ms of CPU time is one sample.
    assert every["samples"] == pytest.approx(every["total"] / 1e7, rel=0.01)
    # py-spy counts a thread that waits for a CPU as on it (as Pyroscope shows it too):
    # on a loaded machine the total lies between the CPU time and the time it ran.
    assert 0.5 * cpu_s <= every["total"] / 1e9 <= wall_s + 0.2
    assert top(collector, f"service={app},team=sre")["total"] == every["total"]
    tagged = top(collector, f"service={app},phase=a")
    assert tagged["rows"][0]["function"] == "hot_a" and tagged["rows"][0]["self"] > 0.8
    # The SDK tags a thread, and py-spy reads the tag apart from the stack: a sample
    # taken as the tag changes may land on the other side.
    assert sum(row["self"] for row in tagged["rows"] if row["function"] == "hot_b") < 0.1
    assert 0 < tagged["total"] < every["total"]


def test_pyroscope_io_1_pushes_the_connect_api(collector: Collector) -> None:
    check_python_app(collector, "py-connect", *run_python_app(collector, "py-connect"))
    metrics = request(collector.url("/metrics"), None, {})[1].decode()
    assert 'endpoint="connect",result="accepted"' in metrics
    assert 'result="rejected"' not in metrics


def test_pyroscope_io_0_8_pushes_ingest_pprof(collector: Collector) -> None:
    assert (PYROSCOPE_IO_08 / "pyroscope").is_dir(), "make setup installs pyroscope-io 0.8.16"
    times = run_python_app(collector, "py-ingest", str(PYROSCOPE_IO_08))
    check_python_app(collector, "py-ingest", *times)
