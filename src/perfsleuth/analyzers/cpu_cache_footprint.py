"""The working set of a traced function outgrows a cache level, or its pages the
TLB's reach, inside the sizes the user scaled over (`--mode cache --scale`): past
that n, its accesses start to miss.

The gain is not something a code change is known to save, so it is estimated as
a small fraction of the function's share; the finding is about where the cliff is.
"""

from __future__ import annotations

from ..cpu_cache_projections import traced_shares
from ..cpu_cache_projections.doubling import page_size_text, pages_text
from ..cpu_cache_projections.scaling import WorkingSet, crossing, measured_bracket, room_held
from ..cpu_cache_projections.scaling import fit as scaling_fit
from ..model.cpu_cache import (
    Cliff,
    ScaledRun,
    Scaling,
    TlbCliff,
    few_calls_text,
    levels_text,
    limited_by_sets,
    run_first_touches,
)
from ..model.findings import Finding
from . import Context

GAIN_FRACTION = 0.2


def analyze(ctx: Context) -> list[Finding]:
    findings = []
    for function, doc, share in traced_shares(ctx.profile, ctx.cache):
        scaling = doc.scaling
        if scaling is None:
            continue
        inside = [finding(function, scaling, c, share) for c in scaling["cliffs"] if c["in_range"]]
        tlb = scaling["tlb"]
        if tlb["available"] and tlb["in_range"]:
            inside.append(tlb_finding(function, scaling, tlb, share))
        if not inside and (outside := outside_text(scaling)):
            ctx.notes.append(f"cache-footprint: no finding for {function}: {outside}")
        findings += inside
    return findings


def outside_text(scaling: Scaling) -> str:
    """Where the predicted cliffs lie when none is inside the scaled range: the
    finding is only for a cliff the runs reached, and `advise` said nothing of the
    others (abseil's flat_hash_map scaled over 500..2,000: every cliff outside)."""
    low, high = scaling["range"]
    placed = [
        (c["level"], "below it" if c.get("below_range") else f"at n = {c['n']:,}")
        for c in scaling["cliffs"]
        if c["n"] is not None
    ]
    tlb = scaling["tlb"]
    if tlb["available"] and tlb.get("n") is not None:
        placed.append(("TLB", f"at n = {tlb['n']:,}"))
    if not placed:
        return ""
    where = ", ".join(f"{level} {at}" for level, at in placed)
    return (
        f"its predicted cliffs lie outside the scaled range {low:,}..{high:,} ({where}); "
        "`perfsleuth cache show` gives them, a --scale over them measures them"
    )


def in_range(rule: str, what: str, scaling: Scaling, share: float, **fields) -> Finding:
    """A finding on a cliff met inside the range of n the user scaled over."""
    low, high = scaling["range"]
    return Finding(
        rule=rule,
        kind="cache-footprint",
        title=f"{what}, inside the scaled range {low:,}..{high:,}",
        share=share,
        estimated_gain=share * GAIN_FRACTION,
        confidence=0.5,
        **fields,
    )


def warnings(scaling: Scaling) -> list[str]:
    """What makes the runs' working sets suspect, as lines of evidence."""
    text = few_calls_text(scaling)
    return [f"warning: {text}"] if text else []


def finding(function: str, scaling: Scaling, cliff: Cliff, share: float) -> Finding:
    return in_range(
        "cache.footprint.cliff",
        f"{function}'s working set exceeds {cliff['level']} at n = {cliff['n']:,}",
        scaling,
        share,
        function=function,
        evidence=[
            working_set_text(scaling, cliff),
            capacity(cliff),
            f"misses per call simulated with {levels_text(scaling['geometry'])}",
            *(
                f"n={run['n']:,}: {run_lines(run, cliff)}, "
                + ", ".join(f"{k} {v:.2f}" for k, v in run["misses_per_call"].items())
                + f" misses/call{run_first_touches(run)}"
                for run in scaling["runs"]
            ),
            *warnings(scaling),
        ],
        suggestion=suggestion(cliff),
        details={"cliff": cliff, "fit": scaling["fit"]},
    )


def working_set_text(scaling: Scaling, cliff: Cliff) -> str:
    """The fit the cliff comes from: of the lines its level holds (the lines touched,
    and the prefetched ones at their room there), not every line cached (boost's
    unordered_flat_map's L2 cliff at n = 13,555 was shown with a fit 5% over
    capacity there)."""
    room = cliff.get("prefetched_room", 1.0)
    points = [(run["n"], held(run, cliff)) for run in scaling["runs"]]
    intercept, slope = scaling_fit(points)
    line_size = scaling["geometry"]["line_size"]
    what = "the lines touched"
    if cliff["working_set"] == "cached_lines":
        what += f" and the prefetched ones at {room:.0%} of a line" if room < 1 else " or cached"
    text = (
        f"{cliff['level']}'s working set = {intercept:.0f} + {slope:.3f} x n cache lines "
        f"({slope * line_size:.1f} B per n; {what})"
    )
    return text + stepped_text(points, (intercept, slope), cliff)


def stepped_text(points: list[tuple[int, float]], line: tuple[float, float], cliff: Cliff) -> str:
    """Why the cliff is not where the fit reaches the capacity, when it is not: the
    runs around it show the working set stepping up between them (tsl::hopscotch_map
    doubling between 50,000 and 60,000 entries: 73,941 then 126,340 lines), and the
    cliff is where the line between those two crosses (scaling.placement); the fit's
    crossing, at 42,471, lies before a run still under the capacity."""
    capacity = cliff["usable_lines"]
    bracket = measured_bracket(points, capacity)
    fitted = crossing(line, capacity)
    if bracket is None or cliff["n"] is None or fitted == cliff["n"]:
        return ""
    (n0, v0), (n1, v1) = bracket
    reaches = f"at n = {fitted:,}" if fitted is not None else "nowhere"
    return (
        f"; that fit reaches the {capacity:,} lines {reaches}, but the runs hold {v0:,.0f} at "
        f"n = {n0:,} and {v1:,.0f} at n = {n1:,}: the working set steps up between them, and "
        "the cliff is where the line through those two runs crosses"
    )


def held(run: ScaledRun, cliff: Cliff) -> float:
    cached = cliff["working_set"] == "cached_lines"
    working_set: WorkingSet = "cached_lines" if cached else "data_lines"
    return room_held(run, working_set, cliff.get("prefetched_room", 1.0))


def run_lines(run: ScaledRun, cliff: Cliff) -> str:
    """A run's lines touched and cached, and held where the level gives a prefetched
    line part of a line's room."""
    text = f"{run['data_lines']:,} lines touched, {run['cached_lines']:,} cached"
    if cliff["working_set"] == "cached_lines" and cliff.get("prefetched_room", 1.0) < 1:
        text += f": {held(run, cliff):,.0f} held"
    return text


def suggestion(cliff: Cliff) -> str:
    fewer = (
        "touch fewer cache lines per n (pack the hot fields of each object together, "
        "see `perfsleuth cache show`), or keep n below the cliff"
    )
    if not limited_by_sets(cliff):
        return fewer
    return (
        f"spread the hot lines over the cache's sets: they sit at the same few places in "
        f"every page (objects whose size is a power-of-two number of lines do that) and can "
        f"fill {cliff['usable_share']:.0%} of the {cliff['level']}; make the size an odd "
        f"number of lines (pad 256 B to 320 B) or keep the hot fields in an array of their "
        f"own; or {fewer}"
    )


def capacity(cliff: Cliff) -> str:
    held = f"{cliff['level']} holds {cliff['capacity_lines']:,} lines"
    if cliff["capacity_source"] == "measured":
        measured = cliff["effective"]
        held = (
            f"{held}, measured on this machine {measured.get('measured_at', '')} "
            f"({measured['evidence']}); sysfs says {cliff['nominal_capacity_lines']:,}, "
            "the rest is taken by other programs or virtual machines"
        )
    if "prefetched_room" in cliff:
        held += (
            f"; a line the prefetcher brought in and nobody touched takes "
            f"{cliff['prefetched_room']:.0%} of a line's room there (it enters low in the LRU "
            "order)"
        )
    if limited_by_sets(cliff):
        held += (
            f"; the working set's lines sit at few places in their pages and fill "
            f"{cliff['usable_share']:.0%} of its sets' room ({cliff['usable_lines']:,} lines)"
        )
    return held


def tlb_finding(function: str, scaling: Scaling, tlb: TlbCliff, share: float) -> Finding:
    return in_range(
        "cache.footprint.tlb",
        f"{function}'s data spreads over more pages than the TLB reaches at n = {tlb['n']:,}",
        scaling,
        share,
        function=function,
        evidence=[
            f"pages touched = {pages_text(tlb, len(scaling['runs']))} ({page_size_text(tlb)})",
            f"this machine's TLB reaches {tlb['reach_pages']:,} pages under random access "
            f"(measured {tlb['measured_at']}: {tlb['evidence']})",
            *(f"n={run['n']:,}: {run['data_pages']:,} pages" for run in scaling["runs"]),
            *warnings(scaling),
        ],
        suggestion=(
            "back the hot objects with huge pages (madvise(MADV_HUGEPAGE) on their arena, "
            "or THP 'always'), or keep their hot fields in a dense array of their own so "
            "fewer pages hold them"
        ),
        details={"tlb": tlb},
    )
