"""The per-machine calibration: its file and what scaling gets of it."""

import json

from perfsleuth.cpu_cache_projections import calibrate
from perfsleuth.cpu_cache_projections.knee import misses
from perfsleuth.cpu_cache_projections.model import parse_spec

MIB = 1 << 20
GEOMETRY = parse_spec("line=64,L1d=32K:8,L2=1M:8,LLC=32M:16")


class Chases:
    """perfsleuth_native's chases on a machine of GEOMETRY whose TLB reaches 3,100
    pages (a walk costs 12 ns) and whose LLC holds `llc` bytes. `burst(call)`:
    how much slower the LLC chase's call number `call` is (a neighbour's burst)."""

    def __init__(self, llc, burst=lambda call: 1.0):
        self.llc, self.burst, self.calls, self.rounds = llc, burst, 0, []

    def chase_aliased_ns(self, pages, steps=1_000_000, rounds=3, seed=0):
        self.rounds.append((steps, rounds))
        return 9.0 + 12.0 * misses(3100, pages)

    def chase_pages_ns(self, pages, per_page=8, steps=1_000_000, rounds=3, seed=0):
        self.rounds.append((steps, rounds))
        size = pages * calibrate.PAGE_SIZE
        caches = 6.0 + 8.0 * misses(MIB, size) + 100.0 * misses(self.llc, size)
        tlb = 12.0 / per_page * misses(3100 * calibrate.PAGE_SIZE, size)
        self.calls += 1
        return (caches + tlb) * self.burst(self.calls)


def calibrated(monkeypatch, chases):
    monkeypatch.setattr(calibrate, "native", lambda: chases)
    return calibrate.measure(GEOMETRY)


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


def test_the_median_sweep_is_kept_and_the_spread_of_the_knees_named():
    sweeps = [({1: 1.0}, 3000, "a"), ({2: 2.0}, None, "none"), ({3: 3.0}, 2000, "c"),
              ({4: 4.0}, 2500, "d")]  # fmt: skip
    curve, found, evidence = calibrate.median_sweep(sweeps, "{:,.0f}".format)
    assert (curve, found) == ({4: 4.0}, 2500)
    assert evidence == "d; knees of 4 sweeps: 2,000 to 3,000"
    many = [({k: 1.0}, k, "e") for k in (5, 1, 4, 2, 3, 9)]
    assert calibrate.median_sweep(many, str)[1:] == (
        4,
        "e; knees of 6 sweeps: 1 to 9, the middle half 2 to 5",
    )
    mostly_none = [({1: 1.0}, None, "flat"), ({2: 2.0}, None, "flat too"), ({3: 3.0}, 2000, "c")]
    assert calibrate.median_sweep(mostly_none, str) == ({1: 1.0}, None, "flat")


def test_the_tlbs_misses_do_not_take_the_rise_of_an_llc_whose_knee_is_near_its_reach(
    monkeypatch,
):
    # The LLC's knee at 12 MiB, the TLB's reach at 12.1 MiB, and the sizes from 6 to
    # 9.5 MiB slowed by a third in every sweep: fitted as a free term, the TLB's
    # curve took the LLC's rise and put its knee at 3.3 MiB.
    def slowed(size):
        return 1.6 if 6 * MIB <= size <= 9.6 * MIB else 1.0

    chases = Chases(12 * MIB)
    plain = chases.chase_pages_ns
    chases.chase_pages_ns = lambda pages, *rest: plain(pages, *rest) * slowed(pages * 4096)
    effective = calibrated(monkeypatch, chases).llc_effective_bytes
    assert effective is not None and abs(effective / (12 * MIB) - 1) < 0.1


def test_a_neighbours_burst_over_two_sweeps_does_not_move_the_llcs_knee(monkeypatch):
    # Over two whole sweeps a neighbour fills the LLC: past 3 MiB every load is
    # 2.5x as slow. Of three sweeps that made the median; of many it does not.
    points = len(calibrate.llc_sweep(GEOMETRY))

    def burst(call):
        return 2.5 if points < call <= 3 * points else 1.0

    chases = Chases(12 * MIB)
    plain = chases.chase_pages_ns

    def slowed_past_3_mib(pages, *rest):
        ns = plain(pages, *rest)
        return ns if pages * 4096 <= 3 * MIB else ns * burst(chases.calls)

    chases.chase_pages_ns = slowed_past_3_mib
    result = calibrated(monkeypatch, chases)
    assert result.llc_effective_bytes is not None
    assert abs(result.llc_effective_bytes / (12 * MIB) - 1) < 0.1
    assert f"knees of {calibrate.LLC_SWEEPS} sweeps: " in result.llc_evidence


def test_every_point_is_the_fastest_of_short_rounds(monkeypatch):
    # A round of a million loads at memory latency lasts longer than a time slice:
    # on a loaded machine every one of three was preempted.
    chases = Chases(12 * MIB)
    result = calibrated(monkeypatch, chases)
    assert result.tlb_reach_pages is not None and abs(result.tlb_reach_pages / 3100 - 1) < 0.05
    assert all(steps <= 50_000 and rounds >= 5 for steps, rounds in chases.rounds)


# /sys/kernel/mm/transparent_hugepage/enabled as read on the benchmark's KVM guest (Debian's
# default, `madvise`), and as a kernel set to `always` writes it
THP_MADVISE = "always [madvise] never\n"
THP_ALWAYS = "[always] madvise never\n"


def test_the_tlb_reach_says_the_huge_page_mode_it_holds_for(tmp_path, monkeypatch):
    """With THP `madvise` a program's malloc'd table is on 4 KiB pages (smaps: no
    AnonHugePages for a 32 MB ankerl::unordered_dense table), the pages the reach is
    measured in; with `always` its tables past 2 MiB are on 2 MiB pages, and a cliff
    counted in 4 KiB pages is not theirs: no reach, and why."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calibrate.save(measured())
    sysfs = tmp_path / "enabled"
    monkeypatch.setattr(calibrate, "THP_ENABLED", sysfs)
    sysfs.write_text(THP_MADVISE)
    tlb = calibrate.limits()["tlb"]
    assert tlb["reach_pages"] == 2048 and tlb["transparent_huge_pages"] == "madvise"
    sysfs.write_text(THP_ALWAYS)
    tlb = calibrate.limits()["tlb"]
    assert "reach_pages" not in tlb
    assert "transparent huge pages are `always`" in tlb["reason"]
    sysfs.unlink()
    assert "transparent_huge_pages" not in calibrate.limits()["tlb"]
