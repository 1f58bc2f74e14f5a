"""The cache projections as text (`perfsleuth cache show`), and this machine's
calibration (`perfsleuth cache calibrate`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from ..cpu_cache_projections.doubling import page_size_text, pages_text
from ..model.cpu_cache import (
    CacheProjections,
    Cliff,
    ConstantTime,
    Footprint,
    InnerField,
    Layout,
    Scaling,
    Simulation,
    StructLayout,
    TlbCliff,
    few_calls_text,
    levels_text,
    limited_by_sets,
    owner,
    parting_text,
    run_first_touches,
    sampling_text,
)


def render(doc: dict[str, Any], console: Console) -> None:
    """doc: views/cpu_cache.py's {"run", "functions"}."""
    for function in map(CacheProjections.from_json, doc["functions"]):
        console.print(Text(f"== {function.function} ({function.executable})", style="bold"))
        if sampled := sampling_text(function.sampling):
            console.print(Text(f"{sampled}; the whole-run totals are the traced calls'"))
        render_footprint(function.footprint, console)
        shown: list[Layout] = [*function.layouts] or [function.layout]  # none: say why
        for layout in shown:
            render_layout(layout, console)
        render_model(function.model, console)
        if function.scaling is not None:
            render_scaling(function.scaling, console)
        if function.constant_time is not None:
            render_constant_time(function.constant_time, console)
        console.print()


def render_footprint(fp: Footprint, console: Console) -> None:
    per = fp["per_call"]
    whole = fp["whole_run"]
    console.print(
        Text(
            f"footprint per call ({fp['calls_recorded']:,} of {fp['calls_total']:,} calls "
            f"recorded, {fp['line_size']} B lines): "
            f"data lines median {per['data_lines']['median']:g} "
            f"(min {per['data_lines']['min']:g}, max {per['data_lines']['max']:g}), "
            f"code lines median {per['code_lines']['median']:g}, data bytes median "
            f"{per['data_bytes']['median']:g}, "
            f"instructions median {per['instructions']['median']:g}, "
            f"loads {per['loads']['median']:g}, stores {per['stores']['median']:g}"
        )
    )
    console.print(
        Text(
            f"  lines shared by most calls: {fp['shared_data_lines']}; particular to one call: "
            f"median {per['private_data_lines']['median']:g}; whole run: {whole['data_lines']:,} "
            f"distinct data lines, {whole['code_lines']:,} code lines"
        )
    )
    for row in fp["by_source"][:8]:
        console.print(
            Text(
                f"  {row['data_lines_per_call']:6.2f} lines/call {row['accesses_per_call']:7.2f} "
                f"accesses/call  {row['source']}"
            )
        )


# lines a call touches beyond the struct's lines whose bytes it touches, for the text
# to say why (stb_ds's 72-byte items: 1.87 lines where the bytes touched lie in one)
STRADDLE = 0.25


def straddling(layout: StructLayout) -> str:
    """Why calls touch more of an object's lines than its struct has: where it starts
    in a line (the start most of the objects have; not kept by older recordings)."""
    size, line = layout["size"], layout["line_size"]
    start = layout.get("object_misalignment", 0)
    own = -(-size // line)
    touched = layout["lines_touched_per_call"]
    if touched > own and -(-(start + size) // line) > own:
        return (
            f" (the object starts at byte {start} of a line, so it spans {own + 1} lines; "
            f"aligned to {line} B it would span {own})"
        )
    in_struct = sum(row["touched"] for row in layout.get("lines", []))
    if in_struct and touched >= in_struct + STRADDLE:
        return (
            f" (the bytes touched lie in {in_struct:.2f} of the struct's lines; the objects "
            f"start at other bytes of a line (most at byte {start}), so those bytes cross a "
            "line boundary)"
        )
    return ""


def render_layout(layout: Layout, console: Console) -> None:
    if not layout["available"]:
        console.print(Text(f"struct layout: not available: {layout['reason']}"))
        return
    console.print(
        Text(
            f"struct layout of {layout_owner(layout)}: "
            f"{layout['lines_touched_per_call']:.2f} of its cache lines touched per call"
            f"{' and element' if layout.get('elements', 1) > 1 else ''}{straddling(layout)}"
        )
    )
    console.print(Text(layout["pahole"]))
    for row in layout["lines"]:
        mark = f"hot: {', '.join(row['hot_fields'])}" if row["hot_fields"] else "cold"
        console.print(Text(f"  line {row['line']}: {mark} (bytes touched in {row['touched']:.0%})"))
    for f in layout["fields"]:
        if f["hot"] and f.get("inside"):
            console.print(Text(f"  inside {f['name']}: {inside(f['inside'])}"))
    reorder = layout["reorder"]
    if reorder:
        console.print(
            Text(
                f"  reorder: move {', '.join(reorder['move'])} from line {reorder['from_line']} to "
                f"line {reorder['to_line']} (swap out {', '.join(reorder['swap_out'])}): "
                f"{reorder['lines_per_object_before']} -> {reorder['lines_per_object_after']} "
                "lines per object"
            )
        )


def inside(members: list[InnerField]) -> str:
    """`hot: first (line 0), second.bytes (line 1); cold: second.name`."""
    hot = [f"{m['name']} (line {m['line']})" for m in members if m["hot"]]
    cold = [m["name"] for m in members if not m["hot"]]
    parts = [f"hot: {', '.join(hot)}" if hot else "", f"cold: {', '.join(cold)}" if cold else ""]
    return "; ".join(p for p in parts if p)


def layout_owner(layout: StructLayout) -> str:
    """`*c (struct conn, 320 B)`, `static table[4096] (struct conn, 320 B per element, ...)`."""
    struct = f"struct {layout['struct']}, {layout['size']} B"
    if layout.get("elements", 1) == 1:
        return f"{owner(layout)} ({struct})"
    return (
        f"{owner(layout)} ({struct} per element, {layout['elements_touched']:,} elements reached)"
    )


def render_model(sim: Simulation, console: Console) -> None:
    misses = ", ".join(f"{name} {value:.2f}" for name, value in sim["misses_per_call"].items())
    first = sim.get("first_touches_per_call")
    split = split_misses(sim.get("split_misses_per_call") or {})
    console.print(
        Text(
            f"cache model ({sim['describe']}): misses per call {misses}"
            f"{first_touches(first)}{split}"
        )
    )


def split_misses(per_level: dict[str, float]) -> str:
    """What of the misses an access crossing a line boundary adds by missing both
    lines: the model counts the lines, cachegrind and callgrind one miss an access."""
    shown = {name: value for name, value in per_level.items() if value >= 0.005}
    if not shown:
        return ""
    levels = ", ".join(f"{name} {value:.2f}" for name, value in shown.items())
    return (
        f" ({levels} of them the second line of an access that crosses a line boundary "
        "and misses both: the model counts each line brought in, cachegrind and callgrind "
        "count one miss for such an access)"
    )


def first_touches(per_call: float | None) -> str:
    """What of the misses a line's first touch in the recording is: the model starts
    empty, where the program may have touched the line before (filling a table), and
    callgrind's caches, warm from the program's start, hit it."""
    if per_call is None:
        return ""
    return (
        f" ({per_call:.2f} of them first touches of a line: the model starts empty at the "
        "first traced call, so they miss in every level here; a level large enough to "
        "hold what the program touched before, as in its set-up, hits them, as "
        "callgrind's caches, warm from the program's start, do)"
    )


def render_scaling(scale: Scaling, console: Console) -> None:
    fit = scale["fit"]
    console.print(
        Text(
            f"scaling: working set = {fit['intercept_lines']:.0f} + {fit['lines_per_n']:.3f} * n "
            f"lines ({fit['bytes_per_n']:.1f} B per n; {fit['of'].replace('_', ' ')}; "
            f"{fit['touched_lines_per_n']:.3f} lines per n touched by the code), for n in "
            f"{scale['range'][0]:,}..{scale['range'][1]:,}"
        )
    )
    if scale["geometry"]["levels"]:
        console.print(Text(f"  misses simulated with {levels_text(scale['geometry'])}"))
    for run in scale["runs"]:
        misses = ", ".join(f"{k} {v:.2f}" for k, v in run["misses_per_call"].items())
        console.print(
            Text(
                f"  n={run['n']:,}: {run['data_lines']:,} lines touched, "
                f"{run['cached_lines']:,} cached; misses/call {misses}{run_first_touches(run)}"
            )
        )
    if warning := few_calls_text(scale):
        console.print(Text(f"  warning: {warning}", style="yellow"))
    for cliff in scale["cliffs"]:
        held = capacity(cliff, fit["of"])
        console.print(
            Text(f"  exceeds {cliff['level']} ({held}) at {where(cliff, scale['range'][0])}")
        )
    tlb = scale["tlb"]
    if not tlb["available"]:
        console.print(Text(f"  TLB: not predicted ({tlb['reason']})", style="dim"))
        return
    console.print(
        Text(
            f"  pages = {pages_text(tlb, len(scale['runs']))} exceed the TLB's measured reach "
            f"({tlb['reach_pages']:,} pages) at {where(tlb, scale['range'][0])} "
            f"({page_size_text(tlb)})"
        )
    )


def capacity(cliff: Cliff, fitted: str) -> str:
    """The level's capacity, measured or from sysfs, and what of it the working set
    can use; `fitted`: the working set of the fit shown above the cliffs."""
    held = f"{cliff['capacity_lines']:,} lines"
    if cliff["capacity_source"] == "measured":
        nominal = cliff["nominal_n"]
        at = f"n = {nominal:,}" if nominal else "never"
        held = (
            f"{held} measured on this machine; sysfs's {cliff['nominal_capacity_lines']:,} "
            f"lines would put the cliff at {at}"
        )
    if cliff["working_set"] != fitted:
        held += "; the lines touched: the prefetcher fills the next levels"
    if "prefetched_room" in cliff:
        held += (
            f"; a prefetched line nobody touched at {cliff['prefetched_room']:.0%} of a line's "
            "room: it enters low in the LRU order"
        )
    return held + usable(cliff)


def usable(cliff: Cliff) -> str:
    """The part of the capacity the working set's lines can use, when their places
    in the page leave some of the level's sets empty."""
    if not limited_by_sets(cliff):
        return ""
    share = cliff["usable_share"]
    return f"; {cliff['usable_lines']:,} usable: the lines fill {share:.0%} of its sets' room"


def where(cliff: Cliff | TlbCliff, low: int) -> str:
    n = cliff["n"]
    if cliff.get("below_range"):
        guess = f"; about n = {n:,}, extrapolated" if n else ""
        return f"an n below the measured range (already over at n = {low:,}{guess})"
    if not n:
        return "never: the working set does not grow toward it"
    return f"n = {n:,}" + (" (inside the measured range)" if cliff["in_range"] else "")


def render_constant_time(ct: ConstantTime, console: Console) -> None:
    if ct["constant_time"]:
        console.print(
            Text(
                f"constant time: yes, {ct['variants']} secrets ran identical instructions and lines"
            )
        )
        return
    for diff in ct["differences"]:
        console.print(
            Text(
                f"constant time: NO, secret #{diff['variant'] + 1} differs from #1 in "
                f"{parting_text(diff)}"
            )
        )


def render_calibration(doc: dict[str, Any], console: Console) -> None:
    """doc: calibrate.Calibration's JSON and where it was saved (`saved_to`)."""
    console.print(Text("ns per access, P random pages that all map one physical page:"))
    for pages, ns in doc["curve_ns"].items():
        console.print(Text(f"  P = {int(pages):>6,}  {ns:6.2f} ns  " + "#" * round(ns)))
    render_tlb(doc, console)
    console.print(Text("ns per access, random lines of B bytes, eight in a page at a time:"))
    for size, ns in doc["llc_curve_ns"].items():
        console.print(Text(f"  B = {mib(int(size)):>9}  {ns:6.2f} ns  " + "#" * round(ns / 4)))
    effective = doc["llc_effective_bytes"]
    if effective is None:
        console.print(Text(f"LLC: not measured ({doc['llc_evidence']})"))
    else:
        nominal = doc["llc_nominal_bytes"]
        console.print(
            Text(
                f"LLC: {mib(effective)} effective of {mib(nominal)} in sysfs; {doc['llc_evidence']}"
            )
        )
    console.print(Text(f"saved to {doc['saved_to']}", style="dim"))


def mib(size: int) -> str:
    return f"{size / (1 << 20):.2f} MiB"


def render_tlb(doc: dict[str, Any], console: Console) -> None:
    reach = doc["tlb_reach_pages"]
    if reach is None:
        console.print(Text(f"no TLB cliff up to {doc['sweep_pages']:,} pages ({doc['evidence']})"))
    else:
        console.print(
            Text(
                f"TLB reach: {reach:,} pages of {doc['page_size'] // 1024} KiB "
                f"({reach * doc['page_size'] / (1 << 20):.1f} MiB); {doc['evidence']}"
            )
        )
