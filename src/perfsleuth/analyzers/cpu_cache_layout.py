"""A hot function touches a field that sits alone on an otherwise cold cache line
of its struct (cache runs only): moving that field next to the other hot fields
saves one cache line per object, so more objects fit in each cache level.

The gain estimate assumes the function's time is dominated by its cache misses
when its objects do not fit, and that those scale with the lines per object:
share x (lines saved / lines touched) x MISS_BOUND_FRACTION.
"""

from __future__ import annotations

from ..cpu_cache_projections import traced_shares
from ..model.cpu_cache import Reorder, Sampling, StructLayout, owner, sampling_text
from ..model.findings import Finding
from . import Context

MISS_BOUND_FRACTION = 0.5
# visits per object from which the calls work on a few objects again and again (a
# table's header, a global struct): their lines stay cached whatever the layout
REVISITS = 8


def analyze(ctx: Context) -> list[Finding]:
    findings = []
    for function, doc, share in traced_shares(ctx.profile, ctx.cache):
        for layout in doc.layouts:
            reorder = layout["reorder"]
            if reorder and saves_lines(layout, reorder) and not revisited(layout):
                found = finding(function, layout, reorder, share)
                findings.append(with_sampling(found, doc.sampling))
    return one_per_move(findings)


def saves_lines(layout: StructLayout, reorder: Reorder) -> bool:
    """A reordering that gives fewer lines than the calls touched in the objects as they
    lie: one placed across fewer lines than its aligned layout (malloc's map at byte
    32 of a line) already touches no more than the move would give."""
    return layout["lines_touched_per_call"] > reorder["lines_per_object_after"]


def revisited(layout: StructLayout) -> bool:
    """Whether the calls reach few objects, each again and again: stb_ds's lookup
    reads its one hash index header (104 B, `storage` alone on line 1) in every
    call, and moving `storage` saves no miss, where the finding ranked first with
    an estimated gain of 23%. Fewer lines per object pay where many objects
    compete for the caches."""
    objects = layout.get("objects")
    return objects is not None and objects * REVISITS <= layout["visits"]


def with_sampling(found: Finding, sampling: Sampling) -> Finding:
    """Hot and cold are shares of the traced calls: say which calls those were."""
    if text := sampling_text(sampling):
        found.evidence.append(text)
    found.details["sampling"] = sampling
    return found


def one_per_move(findings: list[Finding]) -> list[Finding]:
    """A caller's trace includes its callees', so `run --mode cache` tracing both
    sees the same field of the same struct twice: one finding per move, the one
    with the largest gain, naming the other functions."""
    by_move: dict[tuple, list[Finding]] = {}
    for f in findings:
        reorder = f.details["reorder"]
        key = (f.details["struct"], tuple(reorder["move"]), reorder["from_line"])
        by_move.setdefault(key, []).append(f)
    kept = []
    for same in by_move.values():
        best = max(same, key=lambda f: f.estimated_gain)
        others = sorted({f.function for f in same} - {best.function})
        if others:
            best.evidence.append(f"the same move is found in the traces of {', '.join(others)}")
        kept.append(best)
    return kept


def array_evidence(layout: StructLayout, before: int, after: int) -> list[str]:
    """For a global array, what the recorded calls reached and what all of it holds hot."""
    elements = layout.get("elements", 1)
    if elements <= 1:
        return []
    line = layout["line_size"]
    return [
        f"{owner(layout)}: {layout['elements_touched']:,} of {elements:,} elements reached by "
        f"the recorded calls; their hot lines over the whole array: "
        f"{elements * before * line // 1024:,} KiB -> {elements * after * line // 1024:,} KiB"
    ]


def members_on(layout: StructLayout, index: int, moved: list[str]) -> tuple[list[str], list[str]]:
    """The hot and cold names on a line of the struct: its fields, or, for a move of
    members inside a base class (the user's value in a library's node), the members
    inside the base classes whose bytes lie on that line."""
    fields = {f["name"] for f in layout["fields"]}
    if all(name in fields for name in moved):
        row = next(r for r in layout["lines"] if r["line"] == index)
        return row["hot_fields"], row["cold_fields"]
    line = layout["line_size"]
    inside = [
        leaf
        for f in layout["fields"]
        if f.get("fixed")
        for leaf in f.get("inside", [])
        if leaf["offset"] < (index + 1) * line and index * line < leaf["offset"] + leaf["size"]
    ]
    return [m["name"] for m in inside if m["hot"]], [m["name"] for m in inside if not m["hot"]]


def finding(function: str, layout: StructLayout, reorder: Reorder, share: float) -> Finding:
    before, after = reorder["lines_per_object_before"], reorder["lines_per_object_after"]
    moved = ", ".join(reorder["move"])
    line = layout["line_size"]
    _, cold = members_on(layout, reorder["from_line"], reorder["move"])
    neighbours, _ = members_on(layout, reorder["to_line"], reorder["move"])
    return Finding(
        rule="cache.layout.cold-line",
        kind="cache-layout",
        title=(
            f"{function} touches {moved} alone on cache line {reorder['from_line']} of "
            f"struct {layout['struct']} ({owner(layout)}): {before} lines per object where "
            f"{after} would do"
        ),
        function=function,
        share=share,
        estimated_gain=share * (before - after) / before * MISS_BOUND_FRACTION,
        confidence=0.6,
        evidence=[
            f"struct {layout['struct']}: {layout['size']} B, "
            f"{-(-layout['size'] // line)} cache lines of {line} B",
            f"line {reorder['from_line']}: hot {moved}; cold {', '.join(cold)}",
            f"{layout['lines_touched_per_call']:.2f} lines of the struct touched per call",
            "working set per object: "
            f"{before * line} B -> {after * line} B ({(before - after) / before:.0%} less)",
            *array_evidence(layout, before, after),
        ],
        suggestion=(
            f"move {moved} into cache line {reorder['to_line']} next to "
            f"{', '.join(neighbours)}, and move {', '.join(reorder['swap_out'])} (cold) "
            f"down to line {reorder['from_line']}; "
            f"{before / after:.1f}x as many objects then fit in each cache level"
        ),
        details={
            "layout": layout["pahole"],
            "reorder": reorder,
            "field": reorder["move"][0],
            "struct": layout["struct"],
            "variable": owner(layout),
        },
    )
