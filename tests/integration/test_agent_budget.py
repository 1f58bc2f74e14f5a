"""The agent near its CPU cap: a window converted with new addresses left unnamed (as the
agent does past three quarters of its budget) carries each frame's build-id and address,
so that `perfsleuth symbols upload` names it in `fleet top` after the fact, as if the
agent had symbolized it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from integration.test_collector import PERFSLEUTH, TOKEN, push_window, start, stop
from integration.test_fleet_late_symbols import HOTSPOTS, fleet_top

from perfsleuth.agent.host_symbols import HostSymbolizer
from perfsleuth.agent.processes import ProcessTable
from perfsleuth.agent.windows import convert
from perfsleuth.binaries import build_id_of
from perfsleuth.formats import perf_data

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_frames_left_unnamed_for_the_budget_are_named_after_symbols_upload(
    tmp_path: Path,
) -> None:
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    if not perf_data.native_available():
        pytest.skip("perfsleuth_native not built (make native)")
    binary = tmp_path / "hs-budget"  # unstripped: the agent could have named it
    binary.write_bytes(HOTSPOTS.read_bytes())
    binary.chmod(0o755)
    data = tmp_path / "perf.data.2026120500000000"
    record = ["perf", "record", "-q", "-F", "499", "--call-graph", "dwarf", "-o", str(data)]
    subprocess.run([*record, "--", str(binary), "3000000"], check=True, capture_output=True)
    symbolizer = HostSymbolizer()
    symbolizer.name_limit = 0
    now = time.time()
    labels = {"host": "budget-host", "service": "budget"}
    window = convert(
        data,
        start=now - 10,
        end=now,
        labels=labels,
        rate_hz=499,
        symbolizer=symbolizer,
        processes=ProcessTable(),
    ).window
    assert window is not None
    # no user-space address was asked of llvm-symbolizer (kernel ones come from kallsyms)
    assert not symbolizer.user and symbolizer.deferred > 0
    own = [f for f in window.profile.frames if f.dso == "hs-budget"]
    assert own and all(f.function.startswith("[unknown] hs-budget+0x") for f in own)
    assert {f.build_id for f in own} == {build_id_of(str(binary))}
    assert all(f.address for f in own)

    collector = start(tmp_path / "fleet", "--token", TOKEN)
    try:
        status, answer = push_window(collector, window)
        assert status == 200 and json.loads(answer)["stored"] is True
    finally:
        stop(collector)
    cmd = [PERFSLEUTH, "symbols", "upload", "--store", tmp_path / "fleet", binary]
    done = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    after = fleet_top(tmp_path / "fleet", "hs-budget")
    assert not any(f.startswith("[unknown] hs-budget") for f in after)
    assert after["compute_a"] > after["compute_b"] > after["compute_c"], after
