"""What this machine's memory hierarchy really holds, measured: the TLB's reach
(how many 4 KiB pages random accesses can spread over before address translation
starts to miss) and the last-level cache's effective capacity (how many bytes
random accesses can spread over before they go to memory).

Why measure them: sysfs describes the data caches, not the TLB, and under a
hypervisor the reach depends on the host's page size, which nothing in the guest
shows. On an AMD EPYC KVM guest random accesses over more than 2,048 pages
(8 MiB) cost 3-6x more per access, well before its 32 MiB LLC is full. And a
virtual machine shares its LLC with its neighbours (or is given a few of its
ways): on an Intel Xeon guest whose sysfs says 48 MiB, random accesses over
more than 2.5-4 MiB already cost DRAM latency. Cliffs from sysfs sizes alone
would be wrong by 10x there.

TLB: dependent loads, each at a random one of P virtual pages that all map the
same physical page (perfsleuth_native.chase_aliased_ns), for P from 128 to
16,384, in 4 KiB pages (no huge-page advice, like most programs' data). The data
always hits the L1 cache, so the curve rises only when translation misses; the
reach is its knee (knee.py), where the misses begin. (A chase over distinct
pages, one line in each, also overflows the L2 with those lines: on an Intel
Xeon guest its knee was 13,400 pages where the TLB's is 2,048.)

LLC: dependent loads of random lines of B bytes, eight in a page before the next
random page (perfsleuth_native.chase_pages_ns: an eighth of the translations of
a fully random chase), for B from half the level below the LLC to twice the
LLC. The effective capacity is the knee of that curve, fitted with the miss
curve of the level below (at its sysfs size), the TLB's misses (at its measured
reach and cost, an eighth of them per load) taken off first, and it counts when
the latency at twice the knee is clearly above that at half of it. Fitted as a
free term, the TLB's curve took the LLC's rise whenever the two knees were
close (a page walk costs ~12 ns, the fit gave it 54-126 ns), and single sweeps'
knees spread from 6 to 54 MiB on a 32 MiB LLC.

Under load (a shared machine, a shared host) each point is the fastest of
ROUNDS short rounds, of which one has usually not been preempted, and the
knee is the median of many sweeps' knees: the neighbours' use of a shared LLC
comes in bursts of tenths of a second, which make single sweeps' knees wander.

The result is kept per machine in $XDG_CACHE_HOME/perfsleuth/calibration.json.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..model.cpu_cache import Limits, LlcLimit, TlbLimit
from ..model.progress import SILENT, Progress
from .knee import knee, miss_cost, misses
from .model import Geometry, machine_geometry

PAGE_SIZE = 4096
SWEEP = [round(128 * 2 ** (i / 4)) for i in range(4 * 7 + 1)]  # 128 .. 16,384 pages
# At twice a knee, loads must cost this much more than at half of it for the
# knee to count.
TLB_EVIDENCE_RATIO = 1.3  # a page walk that hits the caches costs a few ns
LLC_EVIDENCE_RATIO = 1.5
TLB_SWEEPS = 5
LLC_SWEEPS = 15
ROUNDS = 10
ROUND_STEPS = 20_000  # 2-3 ms at memory latency: under a time slice
LLC_PER_PAGE = 8
LLC_SWEEP_POINTS = 4  # per doubling
LLC_SWEEP_CAP = 256 << 20
METHOD = 6  # part of the fingerprint: a change of method measures again
# The kernel's transparent huge page mode: with `madvise` (Debian's default) or `never`, a
# program's malloc'd data is on 4 KiB pages unless it asks (MADV_HUGEPAGE, glibc's
# glibc.malloc.hugetlb tunable): the pages the reach is measured in. With `always` its
# tables past 2 MiB sit on 2 MiB pages, 512 times the reach, so no 4 KiB cliff is theirs.
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")


@dataclass
class Calibration:
    fingerprint: str
    measured_at: str
    tlb_reach_pages: int | None  # None: no TLB knee up to the sweep's end
    page_size: int
    sweep_pages: int
    curve_ns: dict[str, float]  # pages -> ns per access
    evidence: str
    llc_nominal_bytes: int | None = None
    llc_effective_bytes: int | None = None  # None: no knee measured (see llc_evidence)
    llc_curve_ns: dict[str, float] = field(default_factory=dict)  # bytes -> ns per access
    llc_evidence: str = "not measured"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def fingerprint(geometry: Geometry | None = None) -> str:
    geometry = geometry or machine_geometry()
    machine = f"{platform.node()}|{cpu_model()}|{platform.release()}|{geometry.describe()}"
    return f"v{METHOD}|{machine}"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def native() -> Any:
    try:
        import perfsleuth_native
    except ImportError:
        raise UserError(
            "measuring the TLB and the LLC needs perfsleuth's native extension, which is not "
            "installed; run `make setup` (it needs cargo)"
        ) from None
    return perfsleuth_native


def measure(geometry: Geometry | None = None, progress: Progress = SILENT) -> Calibration:
    geometry = geometry or machine_geometry()
    chase = native()
    llc_points = LLC_SWEEPS * len(llc_sweep(geometry)) if len(geometry.levels) >= 2 else 0
    progress.phase("timing pointer chases", total=TLB_SWEEPS * len(SWEEP) + llc_points)
    curve, reach_pages, evidence = measure_tlb(counted(chase.chase_aliased_ns, progress))
    tlb = tlb_misses(curve, reach_pages)
    llc = measure_llc(counted(chase.chase_pages_ns, progress), geometry, tlb)
    return Calibration(
        fingerprint=fingerprint(geometry),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        tlb_reach_pages=reach_pages,
        page_size=PAGE_SIZE,
        sweep_pages=SWEEP[-1],
        curve_ns={str(p): round(ns, 2) for p, ns in curve.items()},
        evidence=evidence,
        **llc,
    )


Sweep = tuple[dict[int, float], int | None, str]  # curve, knee (None: none), evidence
TlbMisses = Callable[[float], float]  # bytes spread over -> ns per load the TLB's misses add


def counted(chase: Callable[..., float], progress: Progress) -> Callable[..., float]:
    """`chase`, advancing `progress` by one per timed point."""

    def timed(*args: int) -> float:
        ns = chase(*args)
        progress.advance()
        return ns

    return timed


def measure_tlb(chase_aliased_ns: Any) -> Sweep:
    """The median knee of TLB_SWEEPS sweeps (single sweeps' knees spread by +-12%
    on a shared machine)."""
    return median_sweep([tlb_sweep(chase_aliased_ns) for _ in range(TLB_SWEEPS)], "{:,.0f}".format)


def median_sweep(sweeps: list[Sweep], unit: Callable[[float], str]) -> Sweep:
    """The sweep with the median knee, its evidence saying how the sweeps' knees
    spread (`unit` formats one); a sweep without a knee when most have none."""
    found = sorted((s for s in sweeps if s[1] is not None), key=lambda s: s[1] or 0)
    if len(found) * 2 <= len(sweeps):
        return next(s for s in sweeps if s[1] is None)
    curve, knee_found, evidence = found[len(found) // 2]
    knees = [unit(s[1] or 0) for s in found]
    spread = f"{knees[0]} to {knees[-1]}"
    if len(knees) >= 4:
        spread += f", the middle half {knees[len(knees) // 4]} to {knees[(3 * len(knees)) // 4]}"
    return curve, knee_found, f"{evidence}; knees of {len(sweeps)} sweeps: {spread}"


def tlb_sweep(chase_aliased_ns: Any) -> Sweep:
    curve = {pages: chase_aliased_ns(pages, ROUND_STEPS, ROUNDS) for pages in SWEEP}
    found = knee([(float(p), ns) for p, ns in curve.items()])
    reach, evidence = knee_evidence(curve, found, TLB_EVIDENCE_RATIO, lambda p: f"{p:,.0f} pages")
    return curve, reach, evidence


def tlb_misses(curve: dict[int, float], reach_pages: int | None) -> TlbMisses:
    """What the TLB's misses add to each load of the LLC's chase over B bytes: a
    walk (the cost fitted to the TLB's curve at its reach) per new page, one load
    in LLC_PER_PAGE."""
    if reach_pages is None:
        return lambda size: 0.0
    walk = miss_cost([(float(p), ns) for p, ns in curve.items()], reach_pages)
    reach = reach_pages * PAGE_SIZE
    return lambda size: walk * misses(reach, size) / LLC_PER_PAGE


def llc_sweep(geometry: Geometry) -> list[int]:
    """Sizes in whole pages from half the level below the LLC to twice the LLC."""
    low = geometry.levels[-2].size / 2
    high = min(2 * geometry.levels[-1].size, LLC_SWEEP_CAP)
    steps = max(1, round(math.log2(high / low) * LLC_SWEEP_POINTS))
    sizes = (low * (high / low) ** (i / steps) for i in range(steps + 1))
    return sorted({max(2, round(size / PAGE_SIZE)) * PAGE_SIZE for size in sizes})


def measure_llc(chase_pages_ns: Any, geometry: Geometry, tlb: TlbMisses) -> dict:
    """The median knee of LLC_SWEEPS sweeps: a shared LLC's usable part moves
    with what the neighbours do (on an AMD EPYC guest single sweeps gave 6 to
    54 MiB of 32 within a minute)."""
    if len(geometry.levels) < 2:
        return {"llc_evidence": "sysfs describes a single cache level"}
    sweeps = [llc_sweep_once(chase_pages_ns, geometry, tlb) for _ in range(LLC_SWEEPS)]
    curve, effective, evidence = median_sweep(sweeps, human_bytes)
    return {
        "llc_nominal_bytes": geometry.levels[-1].size,
        "llc_effective_bytes": effective,
        "llc_curve_ns": {str(size): round(ns, 2) for size, ns in curve.items()},
        "llc_evidence": evidence,
    }


def llc_sweep_once(chase_pages_ns: Any, geometry: Geometry, tlb: TlbMisses) -> Sweep:
    curve = {
        size: chase_pages_ns(size // PAGE_SIZE, LLC_PER_PAGE, ROUND_STEPS, ROUNDS)
        for size in llc_sweep(geometry)
    }
    return (curve, *llc_evidence(curve, llc_knee(curve, geometry, tlb)))


def llc_knee(curve: dict[int, float], geometry: Geometry, tlb: TlbMisses) -> float | None:
    """The knee of the curve less the TLB's misses, the level below in the fit."""
    caches_only = [(float(size), ns - tlb(size)) for size, ns in curve.items()]
    return knee(caches_only, [float(geometry.levels[-2].size)])


def llc_evidence(curve: dict[int, float], found: float | None) -> tuple[int | None, str]:
    return knee_evidence(curve, found, LLC_EVIDENCE_RATIO, human_bytes)


def knee_evidence(
    curve: dict[int, float], found: float | None, ratio: float, where: Callable[[float], str]
) -> tuple[int | None, str]:
    """The knee, if latency rises at least `ratio` times across it (twice the knee
    against half of it), and the evidence either way."""
    if found is None:
        return None, "no knee in the sweep"
    half, twice = latency_at(curve, found / 2), latency_at(curve, found * 2)
    evidence = f"{half:.1f} ns at {where(found / 2)}, {twice:.1f} ns at {where(found * 2)}"
    if twice < ratio * half:
        return None, f"no clear knee ({evidence})"
    return round(found), evidence


def rise(curve: dict[int, float], found: float) -> float:
    """How many times latency rises across a knee: at twice it against half of it."""
    return latency_at(curve, found * 2) / latency_at(curve, found / 2)


def latency_at(curve: dict[int, float], size: float) -> float:
    """The measured latency at the sweep's size nearest to `size` (in ratio)."""
    return curve[min(curve, key=lambda s: abs(math.log(s / size)))]


def human_bytes(size: float) -> str:
    return f"{size / (1 << 20):.1f} MiB" if size >= 1 << 20 else f"{size / 1024:.0f} KiB"


def cache_dir() -> Path:
    """perfsleuth's per-user cache: this machine's calibration, built tools."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "perfsleuth"


def cache_file() -> Path:
    return cache_dir() / "calibration.json"


def load() -> Calibration | None:
    try:
        doc = json.loads(cache_file().read_text())
        calibration = Calibration(**doc)
    except (OSError, ValueError, TypeError):
        return None
    return calibration if calibration.fingerprint == fingerprint() else None


def save(calibration: Calibration) -> Path:
    path = cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
        json.dump(calibration.to_json(), out, indent=1)
    os.replace(out.name, path)
    return path


def load_or_measure() -> Calibration:
    calibration = load()
    if calibration is None:
        print(
            "perfsleuth: measuring this machine's TLB reach and LLC, once (about half a "
            "minute; `perfsleuth cache calibrate` measures again)",
            file=sys.stderr,
        )
        calibration = measure()
        save(calibration)
    return calibration


def limits() -> Limits:
    """What the scaling projection needs of the calibration, measuring it if this
    machine has none yet: {"tlb": {"reach_pages", ...}, "llc": {"effective_bytes",
    ...}}, each {"reason"} instead when it cannot be had."""
    try:
        calibration = load_or_measure()
    except UserError as error:
        return {"tlb": {"reason": str(error)}, "llc": {"reason": str(error)}}
    return {"tlb": tlb_limit(calibration), "llc": llc_limit(calibration)}


def tlb_limit(calibration: Calibration) -> TlbLimit:
    if calibration.tlb_reach_pages is None:
        why = f"no TLB cliff up to {calibration.sweep_pages:,} pages ({calibration.evidence})"
        return {"reason": why}
    mode = huge_pages_mode()
    if mode == "always":
        return {
            "reason": "transparent huge pages are `always` on this machine: a program's data "
            "past 2 MiB sits on 2 MiB pages, which the reach measured in 4 KiB pages "
            f"({calibration.tlb_reach_pages:,} of them) does not describe"
        }
    limit: TlbLimit = {
        "reach_pages": calibration.tlb_reach_pages,
        "page_size": calibration.page_size,
        "measured_at": calibration.measured_at,
        "evidence": calibration.evidence,
    }
    return limit | ({"transparent_huge_pages": mode} if mode else {})


def huge_pages_mode() -> str | None:
    """The transparent huge page mode in force (`always`, `madvise`, `never`), None
    where the kernel does not say."""
    try:
        chosen = re.search(r"\[(\w+)\]", THP_ENABLED.read_text())
    except OSError:
        return None
    return chosen.group(1) if chosen else None


def llc_limit(calibration: Calibration) -> LlcLimit:
    if calibration.llc_effective_bytes is None:
        return {"reason": f"LLC not measured: {calibration.llc_evidence}"}
    return {
        "effective_bytes": calibration.llc_effective_bytes,
        "nominal_bytes": calibration.llc_nominal_bytes,
        "measured_at": calibration.measured_at,
        "evidence": calibration.llc_evidence,
    }
