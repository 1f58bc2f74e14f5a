"""The fleet simulator's windows: real stacks, planted hot spots, one service per host."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from fleet_sim import service_name, windows  # noqa: E402

from perfsleuth.formats.wire import window_pprof  # noqa: E402
from perfsleuth.formats.wire.ingest import IngestParams  # noqa: E402
from perfsleuth.model.fleet import Window  # noqa: E402


def share(window: Window, pattern: str) -> float:
    p = window.profile
    names = [f.function for f in p.frames]
    hit = sum(c for stack, _w, c, _t, _s in p.rows() if any(pattern in names[f] for f in stack))
    return hit / p.num_samples


def test_each_service_carries_its_planted_hot_spot_on_real_stacks() -> None:
    made = list(windows(hosts=6, services=3, count=2, start=1_800_000_000.0))
    assert len(made) == 12 and len({w.id for w in made}) == 12
    by_service = {w.labels["service"]: w for w in made}
    assert set(by_service) == {service_name(i) for i in range(3)}
    assert share(by_service[service_name(0)], "malloc") > 0.03
    assert share(by_service[service_name(2)], "encode") > 0.01
    zlib = by_service[service_name(1)].profile
    assert any(f.dso.startswith("libz.so") for f in zlib.frames)
    assert all(share(w, "main") > 0.9 for w in made)  # whole stacks, from _start


def test_simulated_windows_survive_the_agents_wire_format() -> None:
    (window,) = windows(hosts=1, services=1, count=1, start=1_800_000_000.0)
    params = IngestParams.parse(window_pprof.query(window), window.id)
    (back,) = window_pprof.decode(window_pprof.encode(window), params)
    assert back.profile.num_samples == window.profile.num_samples
    assert back.processes == window.processes
