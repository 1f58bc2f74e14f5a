"""Late symbolization end to end: a stripped binary profiled the way the agent does it,
pushed to a real collector; its frames are unknown in `fleet top` until `perfsleuth
symbols upload` of the unstripped binary, after which `fleet top` names its functions."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from integration.test_collector import PERFSLEUTH, TOKEN, push_window, start, stop

from perfsleuth.agent.host_symbols import HostSymbolizer
from perfsleuth.agent.processes import ProcessTable
from perfsleuth.agent.windows import convert
from perfsleuth.formats import perf_data

HOTSPOTS = Path(__file__).resolve().parents[2] / "examples" / "bin" / "hotspots"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("perf") is None, reason="needs Linux perf"),
]


def stripped_window(tmp_path: Path, name: str) -> object:
    """A window of the stripped hotspots, as the agent makes one from perf's file."""
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    if not perf_data.native_available():
        pytest.skip("perfsleuth_native not built (make native)")
    binary = tmp_path / name
    subprocess.run(["strip", "-o", str(binary), str(HOTSPOTS)], check=True)
    data = tmp_path / "perf.data.2026112600000000"
    record = ["perf", "record", "-q", "-F", "499", "--call-graph", "dwarf", "-o", str(data)]
    subprocess.run([*record, "--", str(binary), "3000000"], check=True, capture_output=True)
    now = time.time()
    converted = convert(
        data,
        start=now - 10,
        end=now,
        labels={"host": "sym-host", "service": "sym"},
        rate_hz=499,
        symbolizer=HostSymbolizer(),
        processes=ProcessTable(),
    )
    assert converted.window is not None
    return converted.window


def fleet_top(store: Path, comm: str) -> dict[str, float]:
    cmd = [PERFSLEUTH, "fleet", "top", "--store", store, "--where", f"comm={comm}"]
    done = subprocess.run([*map(str, cmd), "--format", "json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {r["function"]: r["self"] for r in json.loads(done.stdout)["rows"]}


def test_symbols_uploaded_after_the_fact_name_a_stripped_binarys_frames(tmp_path: Path) -> None:
    window = stripped_window(tmp_path, "hs-stripped")
    collector = start(tmp_path / "fleet", "--token", TOKEN)
    try:
        status, answer = push_window(collector, window)  # type: ignore[arg-type]
        assert status == 200 and json.loads(answer)["stored"] is True
    finally:
        stop(collector)
    before = fleet_top(tmp_path / "fleet", "hs-stripped")
    own = {f: share for f, share in before.items() if "hs-stripped" in f}
    assert own and all(f.startswith("[unknown] hs-stripped+0x") for f in own)
    assert sum(own.values()) > 0.5

    cmd = [PERFSLEUTH, "symbols", "upload", "--store", tmp_path / "fleet", HOTSPOTS]
    done = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    after = fleet_top(tmp_path / "fleet", "hs-stripped")
    assert not any(f.startswith("[unknown] hs-stripped") for f in after)
    assert {"compute_a", "compute_b", "compute_c", "work"} <= set(after)
    assert after["compute_a"] > after["compute_b"] > after["compute_c"], after
    named = {f: share for f, share in after.items() if f not in before}
    assert sum(named.values()) == pytest.approx(sum(own.values()))
