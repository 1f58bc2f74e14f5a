"""The knee estimator and the per-machine calibration file."""

import json

import pytest

from perfsleuth.cache import calibrate


def lru_latency(capacity, sizes, hit=5.0, penalty=40.0):
    """Uniform random access to an LRU structure of `capacity` entries."""
    return [(x, hit + penalty * max(0.0, 1 - capacity / x)) for x in sizes]


SIZES = [round(128 * 2 ** (i / 4)) for i in range(29)]


@pytest.mark.parametrize("capacity", [300, 2048, 9000])
def test_the_knee_of_an_lru_curve_is_its_capacity(capacity):
    knee = calibrate.knee(lru_latency(capacity, SIZES))
    assert knee == pytest.approx(capacity, rel=0.05)


def test_noise_moves_the_knee_little():
    noise = [0.9, -0.7, 0.4, -1.0, 0.2, 0.8, -0.3, -0.6, 1.0, -0.2]
    noisy = [(x, y + noise[i % len(noise)]) for i, (x, y) in enumerate(lru_latency(2048, SIZES))]
    assert calibrate.knee(noisy) == pytest.approx(2048, rel=0.1)


def test_a_flat_or_falling_curve_has_no_knee():
    assert calibrate.knee([(x, 5.0) for x in SIZES]) is None
    assert calibrate.knee([(x, 100.0 / x) for x in SIZES]) is None


def measured(reach=2048):
    return calibrate.Calibration(
        fingerprint=calibrate.fingerprint(),
        measured_at="2026-11-22T05:00:00Z",
        tlb_reach_pages=reach,
        page_size=4096,
        sweep_pages=16384,
        curve_ns={"128": 4.0},
        evidence="4,096 lines: 36.0 ns one per page, 5.0 ns packed densely",
    )


def test_a_saved_calibration_is_read_back_on_the_same_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = calibrate.save(measured())
    assert path == tmp_path / "perfsleuth" / "calibration.json"
    assert calibrate.load() == measured()
    assert calibrate.tlb_reach()["reach_pages"] == 2048


def test_another_machines_calibration_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = calibrate.save(measured())
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(doc | {"fingerprint": "elsewhere"}))
    assert calibrate.load() is None
    path.write_text("{not json")
    assert calibrate.load() is None


def test_no_tlb_knee_is_reported_with_its_evidence(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calibrate.save(measured(reach=None))
    assert "no TLB cliff up to 16,384 pages" in calibrate.tlb_reach()["reason"]


def test_a_second_rise_far_past_the_knee_does_not_pull_it():
    two_levels = [(x, y + 60 * max(0.0, 1 - 4000 / x)) for x, y in lru_latency(1000, SIZES)]
    assert calibrate.knee(two_levels) == pytest.approx(1000, rel=0.1)
    assert calibrate.lru_fit(two_levels) > 1.1 * 1000  # the single fit is pulled along
