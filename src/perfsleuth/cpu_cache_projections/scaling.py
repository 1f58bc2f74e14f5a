"""Footprint against workload size: `--scale 'n=1000,10000,100000'` runs the
command once per n, fits the distinct data lines the function touches over the
whole run as a + b*n (least squares), and predicts the n at which the working set
exceeds each cache level. The model's misses per call are reported per n.

The working set the caches must hold is larger than the lines the code touches
when the prefetcher brings in lines nobody uses (the cold line next to a hot
one): with the model's prefetcher on, the cliffs of the levels it fills (all but
the first, model.py) come from the fit of the distinct lines the model brought
in (`cached_lines`), demand and prefetch; the first level's from the lines the
code touched (`data_lines`). Each cliff names its `working_set`.

The LLC's cliff uses its effective capacity, measured by calibrate.py, when
there is one: a virtual machine shares the LLC that sysfs describes with its
neighbours, and random accesses go to memory long before sysfs's size is full.
The cliff from the sysfs size is kept beside it (`nominal_n`), and the runs are
simulated with the LLC at that effective size (`model_geometry`): the misses per
call given beside a cliff come from the cache the cliff is computed for.

A working set that already exceeds a level at the smallest n has its cliff below
the range (`below_range`); its n, if any, is an extrapolation.

A level holds its capacity only for lines spread over all its sets. A set is
picked by address bits, the lowest of them inside the page (the same in virtual
and physical addresses): the objects of an array of 256-byte structs whose code
touches their first line (and the prefetcher the second) put lines in half the
sets, and half the capacity is all they get. So each run also counts the lines
brought in by their place in the page (`line_offsets`), and the cliff is where
the working set reaches the capacity those places can use (`usable_lines`,
`usable_share`): the knee of the miss curve that uniform random access over the
working set would have, each group of sets filling on its own.

Address translation has a cliff of its own: past the TLB's reach (measured by
calibrate.py) every access to a new page pays a page walk. The distinct 4 KiB
pages the function touches are fitted the same way, and give the n at which
they exceed that reach. A table that doubles takes its pages in steps: when the
runs show them (doubling.py), the cliff is at the doubling, or the n inside a
phase, that takes the pages past the reach."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from ..errors import UserError
from ..model.cpu_cache import (
    Capacity,
    Cliff,
    Limits,
    LlcLimit,
    MeasuredRun,
    NoTlbCliff,
    Placement,
    ScaledRun,
    Scaling,
    TlbCliff,
    TlbLimit,
)
from . import doubling
from .knee import knee
from .model import Geometry, Level, prefetched_rooms
from .trace import PAGE_SIZE

PLACEHOLDER = "{n}"
MAX_SIZES = 16  # each size is a whole run of the program under valgrind
MAX_N = 10**9
WorkingSet = Literal["cached_lines", "data_lines"]  # what a fit counts


def parse_scale(spec: str) -> list[int]:
    match = re.fullmatch(r"\s*n\s*=\s*([\d_,\s]+)", spec)
    values = [int(v) for v in re.split(r"[,\s]+", match[1].strip())] if match else []
    if len(values) < 2 or any(v <= 0 for v in values):
        raise UserError(
            f"--scale {spec!r}: give two or more positive sizes, like 'n=1000,10000,100000'"
        )
    sizes = sorted(set(values))
    if len(sizes) > MAX_SIZES or sizes[-1] > MAX_N:
        raise UserError(
            f"--scale {spec!r}: at most {MAX_SIZES} sizes (one run each), none above {MAX_N:,}"
        )
    return sizes


def substitute(cmd: list[str], n: int) -> list[str]:
    return [arg.replace(PLACEHOLDER, str(n)) for arg in cmd]


def check_placeholder(cmd: list[str]) -> None:
    if not any(PLACEHOLDER in arg for arg in cmd):
        raise UserError("--scale needs {n} in the command where the size goes, e.g. -- ./prog {n}")


def fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of the least-squares line y = a + b*x."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    var = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else 0.0
    return mean_y - slope * mean_x, slope


def project(runs: list[MeasuredRun], geometry: Geometry, limits: Limits | None = None) -> Scaling:
    """runs: sizes ascending; limits: calibrate.limits(), each {"reason"} when not
    measured."""
    limits = limits or {}
    touched = fit([(r["n"], r["data_lines"]) for r in runs])
    key: WorkingSet = "cached_lines" if geometry.prefetch else "data_lines"
    line = fit([(r["n"], r[key]) for r in runs])
    llc = limits.get("llc") or {"reason": "not measured"}
    cliffs = [level_cliff(runs, geometry, index, key, llc) for index in range(len(geometry.levels))]
    intercept, slope = line
    return {
        "runs": [
            {**r, "misses_per_call": {k: v / max(r["calls"], 1) for k, v in r["misses"].items()}}
            for r in runs
        ],
        "fit": {
            "of": key,
            "touched_lines_per_n": touched[1],
            "touched_intercept_lines": touched[0],
            "intercept_lines": intercept,
            "lines_per_n": slope,
            "bytes_per_n": slope * geometry.line_size,
        },
        "range": [runs[0]["n"], runs[-1]["n"]],
        "cliffs": cliffs,
        "tlb": tlb_cliff(runs, limits.get("tlb") or {"reason": "not measured"}),
        "geometry": model_geometry(geometry, llc).to_json(),
    }


def model_geometry(geometry: Geometry, llc: LlcLimit) -> Geometry:
    """The geometry the scaled runs are simulated with: the last of several levels
    at its measured, effective size when there is one (the size its cliff uses)."""
    effective = llc.get("effective_bytes")
    if not effective or len(geometry.levels) < 2:
        return geometry
    last = geometry.levels[-1]
    unit = last.ways * geometry.line_size
    resized = Level(last.name, max(unit, effective // unit * unit), last.ways)
    return Geometry(geometry.line_size, (*geometry.levels[:-1], resized), geometry.prefetch)


def level_cliff(
    runs: list[MeasuredRun],
    geometry: Geometry,
    index: int,
    fitted: WorkingSet,
    llc: LlcLimit,
) -> Cliff:
    """Where the working set outgrows level `index` of the geometry: its fit against n
    reaches the capacity that the sets its lines use hold."""
    level = geometry.levels[index]
    # the model's prefetcher fills the levels below the first (model.py), the
    # first of them with its lines low in the LRU order
    demand = geometry.prefetch and index == 0 and len(geometry.levels) > 1
    room = prefetched_rooms(geometry)[index]
    working_set: WorkingSet = "data_lines" if demand else fitted
    points = [(r["n"], room_held(r, working_set, room)) for r in runs]
    held = fit(points)
    offsets = (
        runs[-1].get("touched_offsets") if demand else offsets_held(runs[-1], working_set, room)
    )
    nominal = level.lines(geometry.line_size)
    capacity: Capacity = {"capacity_lines": nominal, "capacity_source": "sysfs"}
    if index == len(geometry.levels) - 1 and index > 0:
        capacity = llc_capacity(llc, nominal, geometry.line_size, held)
    share = usable_share(offsets, set_groups(level, geometry.line_size))
    usable = round(capacity["capacity_lines"] * share)
    cliff: Cliff = {
        "level": level.name,
        "working_set": working_set,
        **capacity,
        "usable_share": share,
        "usable_lines": usable,
        **placement(held, usable, points),
    }
    if 0 < room < 1:
        cliff["prefetched_room"] = room
    return cliff


def room_held(run: MeasuredRun | ScaledRun, working_set: WorkingSet, room: float) -> float:
    """The room the working set takes: the lines touched whole, the others brought
    in (the prefetcher's) at `room` of a line each (none for the lines touched)."""
    return run["data_lines"] + room * (run[working_set] - run["data_lines"])


def offsets_held(run: MeasuredRun, working_set: WorkingSet, room: float) -> Sequence[float] | None:
    """room_held per place in the page."""
    held, touched = run.get("line_offsets"), run.get("touched_offsets")
    if working_set == "data_lines":
        return touched
    if room in (0, 1) or held is None or touched is None:
        return held
    return [t + room * (h - t) for h, t in zip(held, touched, strict=True)]


def placement(
    line: tuple[float, float], capacity: float, points: list[tuple[int, float]]
) -> Placement:
    """Where the fit reaches capacity, relative to the scaled range; `points`: the
    working set measured at each n. One already over capacity at the smallest n
    puts the cliff below the range: at the fit's crossing when that is below the
    smallest n, else at the smallest n scaled down in proportion (the fit's
    intercept, set by the larger n, may keep it from crossing at all). One that
    crosses capacity between two measured n has its cliff between them: at the
    fit's crossing when that falls there, else where the line between the two
    measurements crosses (a working set that grows by steps, such as a table's
    doubled buckets, can put the fit over capacity at every n, crossing at none)."""
    low, high = points[0][0], points[-1][0]
    smallest = points[0][1]
    n = crossing(line, capacity)
    below = smallest >= capacity
    if below and (n is None or n >= low):
        n = round(low * capacity / smallest) if smallest > 0 and capacity > 0 else None
    elif not below and (bracket := measured_bracket(points, capacity)) is not None:
        (n0, v0), (n1, v1) = bracket
        if n is None or not n0 <= n <= n1:
            n = round(n0 + (capacity - v0) * (n1 - n0) / (v1 - v0))
    return {
        "n": n,
        "in_range": not below and n is not None and low <= n <= high,
        "below_range": below,
    }


def measured_bracket(
    points: list[tuple[int, float]], capacity: float
) -> tuple[tuple[int, float], tuple[int, float]] | None:
    """The first two consecutive measurements the working set crosses capacity between."""
    for before, after in zip(points, points[1:], strict=False):
        if before[1] < capacity <= after[1]:
            return before, after
    return None


def set_groups(level: Level, line_size: int) -> int:
    """Into how many groups of sets a line's place in its page sorts it: the set
    index bits that lie inside the page (a power of two dividing the set count;
    a count that is not a power of two is hashed, and the rest fills evenly)."""
    sets = level.size // (level.ways * line_size)
    return math.gcd(sets, PAGE_SIZE // line_size) if sets else 1


def usable_share(offsets: Sequence[float] | None, groups: int) -> float:
    """The share of a level's capacity that a working set with these counts of
    lines per place in the page fills before it misses: the knee of the miss
    curve sum_g p_g * max(0, 1 - 1 / (groups * p_g * x)) over x = working set /
    capacity, each group of sets holding 1/groups of the capacity and taking the
    share p_g of the uniformly random accesses. 1 when the lines spread evenly."""
    folded = [0.0] * groups
    for place, count in enumerate(offsets or []):
        folded[place % groups] += count
    total = sum(folded)
    if total == 0 or groups == 1 or looks_even(folded):
        return 1.0
    shares = [count / total for count in folded if count]
    onset = 1 / (groups * max(shares))
    steps = math.ceil(16 * math.log2(8 / onset))
    xs = [onset / 2 * 2 ** (k / 16) for k in range(steps + 1)]
    curve = [(x, sum(p * max(0.0, 1 - 1 / (groups * p * x)) for p in shares)) for x in xs]
    return min(1.0, knee(curve) or 1.0)


def looks_even(counts: list[float]) -> bool:
    """Whether counts per group are what lines at random places would give: a
    chi-square statistic within three standard deviations of its mean. A small
    working set at random places (a hash table's nodes) leaves some groups short
    by chance, and would otherwise read as a layout that leaves sets empty."""
    expected = sum(counts) / len(counts)
    chi_square = sum((count - expected) ** 2 for count in counts) / expected
    freedom = len(counts) - 1
    return chi_square <= freedom + 3 * math.sqrt(2 * freedom)


def crossing(line: tuple[float, float], capacity: float) -> int | None:
    """The n at which intercept + slope * n reaches capacity, if it ever does."""
    intercept, slope = line
    n = (capacity - intercept) / slope if slope > 0 else None
    return round(n) if n is not None and n > 0 else None


def llc_capacity(
    llc: LlcLimit, nominal: int, line_size: int, line: tuple[float, float]
) -> Capacity:
    """The LLC cliff's capacity: the measured, effective one when there is one."""
    effective = llc.get("effective_bytes")
    if not effective:
        return {
            "capacity_lines": nominal,
            "capacity_source": "sysfs",
            "effective": {"available": False, "reason": llc.get("reason", "not measured")},
        }
    return {
        "capacity_lines": effective // line_size,
        "capacity_source": "measured",
        "nominal_capacity_lines": nominal,
        "nominal_n": crossing(line, nominal),
        "effective": {"available": True, **llc},
    }


def tlb_cliff(runs: list[MeasuredRun], tlb: TlbLimit) -> TlbCliff | NoTlbCliff:
    reach = tlb.get("reach_pages")
    if not reach:
        return {"available": False, "reason": tlb.get("reason", "no TLB knee measured")}
    points = [(r["n"], float(r["data_pages"])) for r in runs]
    intercept, slope = fit(points)
    linear: TlbCliff = {
        **tlb,
        "available": True,
        "intercept_pages": intercept,
        "pages_per_n": slope,
        **placement((intercept, slope), reach, points),
    }
    stepped = doubling.steps(points)
    if stepped is None or linear["below_range"]:
        return linear
    n = doubling.crossing(stepped, reach, MAX_N)
    return {
        **linear,
        "intercept_pages": stepped["intercept"],
        "pages_per_n": stepped["per_n"],
        "steps": stepped,
        "n": n,
        "in_range": n is not None and points[0][0] <= n <= points[-1][0],
    }
