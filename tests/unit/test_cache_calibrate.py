"""The per-machine calibration: its file and what scaling gets of it."""

import json

from perfsleuth.cpu_cache_projections import calibrate
from perfsleuth.cpu_cache_projections.model import parse_spec


def measured(reach=2048, llc=5 << 19):
    return calibrate.Calibration(
        fingerprint=calibrate.fingerprint(),
        measured_at="2026-11-22T05:00:00Z",
        tlb_reach_pages=reach,
        page_size=4096,
        sweep_pages=16384,
        curve_ns={"128": 4.0},
        evidence="5.1 ns at 1,024 pages, 9.6 ns at 4,096 pages",
        llc_nominal_bytes=48 << 20,
        llc_effective_bytes=llc,
        llc_curve_ns={"655360": 6.0},
        llc_evidence="10.6 ns at 1.2 MiB, 74.5 ns at 4.8 MiB" if llc else "no clear knee",
    )


def test_a_saved_calibration_is_read_back_on_the_same_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = calibrate.save(measured())
    assert path == tmp_path / "perfsleuth" / "calibration.json"
    assert calibrate.load() == measured()
    limits = calibrate.limits()
    assert limits["tlb"]["reach_pages"] == 2048
    assert limits["llc"]["effective_bytes"] == 5 << 19
    assert limits["llc"]["nominal_bytes"] == 48 << 20


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
    assert "no TLB cliff up to 16,384 pages" in calibrate.limits()["tlb"]["reason"]


def test_no_llc_knee_is_reported_with_its_evidence(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calibrate.save(measured(llc=None))
    assert calibrate.limits()["llc"] == {"reason": "LLC not measured: no clear knee"}


def test_the_llc_sweep_runs_from_half_the_level_below_to_twice_the_llc_in_pages():
    sweep = calibrate.llc_sweep(parse_spec("line=64,L1d=32K:8,L2=1M:16,LLC=16M:16"))
    assert sweep[0] == 512 << 10 and sweep[-1] == 32 << 20
    assert all(size % calibrate.PAGE_SIZE == 0 for size in sweep)
    assert len(sweep) == 6 * calibrate.LLC_SWEEP_POINTS + 1


def test_a_knee_counts_only_when_the_latency_clearly_rises_across_it():
    curve = {1 << 20: 10.0, 2 << 20: 12.0, 4 << 20: 60.0, 8 << 20: 100.0}
    evidence = "10.0 ns at 1.0 MiB, 60.0 ns at 4.0 MiB"
    assert calibrate.llc_evidence(curve, 2 << 20) == (2 << 20, evidence)
    flat = {size: 10.0 for size in curve}
    effective, why = calibrate.llc_evidence(flat, 2 << 20)
    assert effective is None and why.startswith("no clear knee")
    assert calibrate.llc_evidence(curve, None) == (None, "no knee in the sweep")


def test_the_median_sweep_is_kept_and_every_knee_is_named():
    sweeps = [({1: 1.0}, 3000, "a"), ({2: 2.0}, None, "none"), ({3: 3.0}, 2000, "c"),
              ({4: 4.0}, 2500, "d")]  # fmt: skip
    curve, found, evidence = calibrate.median_sweep(sweeps, "{:,.0f}".format)
    assert (curve, found) == ({4: 4.0}, 2500)
    assert evidence == "d; knees of 4 sweeps: 2,000, 2,500, 3,000"
    mostly_none = [({1: 1.0}, None, "flat"), ({2: 2.0}, None, "flat too"), ({3: 3.0}, 2000, "c")]
    assert calibrate.median_sweep(mostly_none, str) == ({1: 1.0}, None, "flat")
