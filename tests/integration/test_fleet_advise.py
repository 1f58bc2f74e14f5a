"""The fleet advisor on the simulator's fleet, pushed through a real collector: the planted
hot spots (glibc allocator, zlib, CPython's JSON encoder) and the node maps whose malloc the
allocator's finding shares are its top 4, each naming the service it was planted in; a
real `try allocator` result attaches to the allocator finding."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from fleet_sim import push, service_name, start_collector, windows  # noqa: E402

from perfsleuth.cli import main  # noqa: E402
from perfsleuth.formats.wire import window_pprof  # noqa: E402
from perfsleuth.model.findings import Finding  # noqa: E402
from perfsleuth.rank import measured_gain  # noqa: E402

TOKEN = "advise-test"
PLANTED = {"allocator.glibc": 0, "compression.zlib": 1, "python.json": 2}  # rule -> service
START = 1_700_000_000.0 - 1_700_000_000.0 % 3600
MAP_ALLOC = Path(__file__).resolve().parents[2] / "examples" / "bin" / "map_alloc"


@pytest.fixture(scope="module")
def span(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The simulator's fleet (6 hosts, 3 services, 30 s) pushed through a real collector."""
    store = tmp_path_factory.mktemp("advise") / "fleet"
    collector, url = start_collector(store, TOKEN)
    try:
        for w in windows(hosts=6, services=3, count=3, start=START):
            push(url, window_pprof.encode(w), window_pprof.query(w), w.id, TOKEN)
    finally:
        collector.send_signal(signal.SIGTERM)
        collector.wait(30)
    return ["--store", str(store), "--from", str(START), "--to", str(START + 30)]


def test_fleet_advise_finds_the_planted_hot_spots(span: list[str], capsys) -> None:
    assert main(["fleet", "advise", *span, "--core-cost", "50", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # The three planted hot spots, and the node maps whose malloc the allocator finding
    # shares (kept right after it: the same hot spot, fixed without a code change first).
    rules = [f["rule"] for f in doc["findings"]]
    assert set(rules[:4]) == {*PLANTED, "container.node-map"}
    top3 = {f["rule"]: f for f in doc["findings"][:4] if f["rule"] in PLANTED}
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
    # malloc called from std::map nodes: one hot spot, the fix without a code change first
    # although the node maps' estimate is larger
    node_map = doc["findings"][rules.index("allocator.glibc") + 1]
    assert node_map["rule"] == "container.node-map"
    assert node_map["cores_saved"] > allocator["cores_saved"]
    assert (allocator["same_hot_spot"], node_map["same_hot_spot"]) == (
        "container.node-map",
        "allocator.glibc",
    )
    assert any("build flags not checked" in n for n in doc["notes"])

    assert main(["fleet", "advise", *span]) == 0
    text = capsys.readouterr().out
    assert "cores saved" in text and "perfsleuth try allocator" in text
    assert "then `fleet advise --verified FILE`" in " ".join(text.split())


def _allocator(doc: dict) -> dict:
    return next(f for f in doc["findings"] if f["rule"] == "allocator.glibc")


def test_a_try_allocator_result_is_attached_to_the_allocator_finding(
    span: list[str], tmp_path: Path, capsys
) -> None:
    measured = tmp_path / "try.json"
    try_cmd = ["try", "allocator", "--allocators", "mimalloc", "--runs", "9", "--warmup", "0"]
    out = ["--metric", "cpu", "--format", "json", "-o", str(measured)]
    assert (
        main([*try_cmd, *out, "--store", str(tmp_path / "runs"), "--", str(MAP_ALLOC), "200"]) == 0
    )
    tried = json.loads(measured.read_text())["variants"][0]
    capsys.readouterr()

    assert main(["fleet", "advise", *span, "--core-cost", "50", "--format", "json"]) == 0
    before = _allocator(json.loads(capsys.readouterr().out))
    args = ["fleet", "advise", *span, "--core-cost", "50", "--verified", str(measured)]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    after = _allocator(doc)

    assert "verified" not in before
    verified = after["verified"]
    assert verified["program"] == "map_alloc" and verified["variant"] == "mimalloc"
    assert verified["file"] == str(measured)
    assert {k: verified[k] for k in ("verdict", "ratio", "ci95", "runs", "p_value")} == {
        k: tried[k] for k in ("verdict", "ratio", "ci95", "runs", "p_value")
    }
    assert verified["candidate"]["env"]["LD_PRELOAD"].endswith("libmimalloc.so.2")
    # the program's cores: map_alloc is 40% of svc-0's 2 hosts x 8 CPUs x 60% busy
    assert verified["program_cores"] == pytest.approx(2 * 8 * 0.6 * 0.4, rel=0.05)
    gain = measured_gain(Finding("r", "allocator", "t", 1, 0, 1, "s", verified=verified))
    assert verified["cores_saved"] == pytest.approx(gain * verified["program_cores"])
    # measured in map_alloc, the estimate for the rest (the allocator in other programs)
    assert after["estimated_cores_saved"] == pytest.approx(before["cores_saved"])
    rest = after["cores_saved"] - verified["cores_saved"]
    assert 0 <= rest < 0.2 * before["cores_saved"]
    assert after["money_per_month"] == pytest.approx(after["cores_saved"] * 50)
    assert not any("attached to no finding" in n for n in doc["notes"])

    assert main(args) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"measured ({measured}): {verified['summary']}" in text
    assert f"{after['cores_saved']:.2f} cores saved: {verified['cores_saved']:.2f} measured" in text


def test_a_result_of_another_program_is_said_not_attached(
    span: list[str], tmp_path: Path, capsys
) -> None:
    measured = tmp_path / "try.json"
    try_cmd = ["try", "allocator", "--allocators", "mimalloc", "--runs", "3", "--warmup", "0"]
    out = ["--format", "json", "-o", str(measured), "--store", str(tmp_path / "runs")]
    other = MAP_ALLOC.with_name("alloc_heavy")
    assert main([*try_cmd, *out, "--", str(other), "1"]) == 0
    capsys.readouterr()

    args = ["fleet", "advise", *span, "--verified", str(measured), "--format", "json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "verified" not in _allocator(doc)
    assert any(f"{measured} (try on alloc_heavy) attached to no finding" in n for n in doc["notes"])

    not_try = tmp_path / "top.json"
    not_try.write_text('{"rows": []}')
    assert main(["fleet", "advise", *span, "--verified", str(not_try)]) == 2
    assert "not the JSON of `perfsleuth try" in capsys.readouterr().err
