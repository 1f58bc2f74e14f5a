"""The fleet advisor on the simulator's fleet, pushed through a real collector: the planted
hot spots (glibc allocator, zlib, CPython's JSON encoder) are its top 3, each naming the
service it was planted in."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from fleet_sim import push, service_name, start_collector, windows  # noqa: E402

from perfsleuth.cli import main  # noqa: E402
from perfsleuth.formats import window_pprof  # noqa: E402

TOKEN = "advise-test"
PLANTED = {"allocator.glibc": 0, "compression.zlib": 1, "python.json": 2}  # rule -> service


def test_fleet_advise_finds_the_planted_hot_spots(tmp_path: Path, capsys) -> None:
    store = tmp_path / "fleet"
    start = 1_700_000_000.0 - 1_700_000_000.0 % 3600
    collector, url = start_collector(store, TOKEN)
    try:
        for w in windows(hosts=6, services=3, count=3, start=start):
            push(url, window_pprof.encode(w), window_pprof.query(w), w.id, TOKEN)
    finally:
        collector.send_signal(signal.SIGTERM)
        collector.wait(30)
    span = ["--store", str(store), "--from", str(start), "--to", str(start + 30)]

    assert main(["fleet", "advise", *span, "--core-cost", "50", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    top3 = {f["rule"]: f for f in doc["findings"][:3]}
    assert set(top3) == set(PLANTED)
    for rule, service in PLANTED.items():
        finding = top3[rule]
        assert finding["services"][0]["service"] == service_name(service)
        assert {h["host"] for h in finding["hosts"]} == {
            f"sim-host-{h}" for h in range(6) if h % 3 == service
        }
        assert finding["cores_saved"] > 0
        assert finding["money_per_month"] == finding["cores_saved"] * 50
    # 6 hosts x 8 CPUs, 60% busy, over the whole range
    assert doc["cores"] == pytest.approx(6 * 8 * 0.6, rel=0.01)
    allocator = top3["allocator.glibc"]
    assert allocator["fix"]["experiment"] == "perfsleuth try allocator -- /usr/bin/map_alloc"
    assert any("build flags not checked" in n for n in doc["notes"])

    assert main(["fleet", "advise", *span]) == 0
    text = capsys.readouterr().out
    assert "cores saved" in text and "perfsleuth try allocator" in text
