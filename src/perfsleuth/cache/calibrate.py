"""This machine's TLB reach, measured: how many 4 KiB pages random accesses can
spread over before address translation starts to miss.

Why measure it: sysfs describes the data caches, not the TLB, and under a
hypervisor the reach depends on the host's page size, which nothing in the guest
shows. On the development VM (AMD EPYC under KVM, 32 MiB LLC) random accesses
spread over more than 2,048 pages (8 MiB) cost 3-6x more per access, well before
the LLC is full: a cliff that cache sizes alone cannot predict.

Method: dependent loads of one line in each of P pages, the pages in random
order (perfsleuth_native.chase_ns), for P from 128 to 16,384, on
ordinary heap memory (no huge-page advice, like most programs' data). The
reach is the knee of that curve (`knee`), where the misses begin. A knee only
counts as the TLB's when the same number of lines packed densely (64 B apart, a
few pages) is clearly faster at twice the knee: otherwise the rise came from
the data caches.

The result is kept per machine in $XDG_CACHE_HOME/perfsleuth/calibration.json.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from .model import Geometry, machine_geometry

PAGE_SIZE = 4096
LINE = 64
SWEEP = [round(128 * 2 ** (i / 4)) for i in range(4 * 7 + 1)]  # 128 .. 16,384 pages
# At twice the knee, sparse lines must cost this much more than dense ones for
# the knee to be the TLB's and not the data caches'.
TLB_EVIDENCE_RATIO = 1.5
KNEE_GRID = 300
KNEE_WINDOW = 2.0
REFITS = 3
METHOD = 3  # part of the fingerprint: a change of method measures again


@dataclass
class Calibration:
    fingerprint: str
    measured_at: str
    tlb_reach_pages: int | None  # None: no TLB knee up to the sweep's end
    page_size: int
    sweep_pages: int
    curve_ns: dict[str, float]  # pages -> ns per access
    evidence: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def knee(points: list[tuple[float, float]]) -> float | None:
    """Where the misses begin: `lru_fit` over all the points, then again over those
    within a factor KNEE_WINDOW of the last estimate, until it settles (REFITS at
    most), so that a further rise far past the knee (the next level) does not pull
    it along."""
    estimate = lru_fit(points)
    for _ in range(REFITS):
        if estimate is None:
            return None
        near = [(x, y) for x, y in points if estimate / KNEE_WINDOW <= x <= estimate * KNEE_WINDOW]
        refined = lru_fit(near)
        if refined is None or refined == estimate:
            break
        estimate = refined
    return estimate


def lru_fit(points: list[tuple[float, float]]) -> float | None:
    """The capacity K of the best least-squares fit of latency = a + c*max(0, 1 - K/x)
    with c > 0: what an LRU structure of K entries gives under uniform random
    access, whose misses are 1 - K/x once x > K. Real, set-associative
    structures start to miss a little before K; the fit puts K where the curve
    as a whole says the misses begin. None when the curve does not rise."""
    points = sorted(points)
    if len(points) < 4:
        return None
    xs, ys = [x for x, _ in points], [y for _, y in points]
    best: tuple[float, float | None] = (math.inf, None)
    for step in range(KNEE_GRID + 1):
        k = xs[1] * (xs[-2] / xs[1]) ** (step / KNEE_GRID)
        fitted = fit_rise([max(0.0, 1 - k / x) for x in xs], ys)
        if fitted is not None:
            best = min(best, (fitted, k))
    return best[1]


def fit_rise(zs: list[float], ys: list[float]) -> float | None:
    """Residual of the least-squares line y = a + c*z, None unless c > 0."""
    mean_z, mean_y = sum(zs) / len(zs), sum(ys) / len(ys)
    var = sum((z - mean_z) ** 2 for z in zs)
    if var == 0:
        return None
    c = sum((z - mean_z) * (y - mean_y) for z, y in zip(zs, ys, strict=True)) / var
    if c <= 0:
        return None
    a = mean_y - c * mean_z
    return sum((a + c * z - y) ** 2 for z, y in zip(zs, ys, strict=True))


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


def chase() -> Any:
    try:
        from perfsleuth_native import chase_ns
    except ImportError:
        raise UserError(
            "measuring the TLB needs perfsleuth's native extension, which is not installed; "
            "run `make setup` (it needs cargo)"
        ) from None
    return chase_ns


def measure() -> Calibration:
    chase_ns = chase()
    curve = {pages: chase_ns(pages, PAGE_SIZE) for pages in SWEEP}
    reach = knee([(float(p), ns) for p, ns in curve.items()])
    reach_pages = round(reach) if reach is not None else None
    evidence = "no knee in the sweep"
    if reach_pages is not None:
        probe = min(2 * reach_pages, SWEEP[-1])
        sparse, dense = chase_ns(probe, PAGE_SIZE), chase_ns(probe, LINE)
        evidence = f"{probe:,} lines: {sparse:.1f} ns one per page, {dense:.1f} ns packed densely"
        if sparse < TLB_EVIDENCE_RATIO * dense:
            reach_pages = None
    return Calibration(
        fingerprint=fingerprint(),
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        tlb_reach_pages=reach_pages,
        page_size=PAGE_SIZE,
        sweep_pages=SWEEP[-1],
        curve_ns={str(p): round(ns, 2) for p, ns in curve.items()},
        evidence=evidence,
    )


def cache_file() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "perfsleuth" / "calibration.json"


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
            "perfsleuth: measuring this machine's TLB reach, once (a few seconds; "
            "`perfsleuth cache calibrate` measures again)",
            file=sys.stderr,
        )
        calibration = measure()
        save(calibration)
    return calibration


def tlb_reach() -> dict[str, Any]:
    """What the scaling projection needs of the calibration, measuring it if this
    machine has none yet; {"reason"} when it cannot be measured."""
    try:
        calibration = load_or_measure()
    except UserError as error:
        return {"reason": str(error)}
    if calibration.tlb_reach_pages is None:
        why = f"no TLB cliff up to {calibration.sweep_pages:,} pages ({calibration.evidence})"
        return {"reason": why}
    return {
        "reach_pages": calibration.tlb_reach_pages,
        "page_size": calibration.page_size,
        "measured_at": calibration.measured_at,
        "evidence": calibration.evidence,
    }
