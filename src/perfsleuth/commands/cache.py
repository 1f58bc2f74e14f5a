"""perfsleuth cache show [RUN]: the cache projections of a `--mode cache` run.
perfsleuth cache calibrate: measure this machine's TLB reach again (scaling uses it)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.text import Text

from ..cpucache import DOCUMENT_KIND, calibrate
from ..cpucache.scaling import limited_by_sets
from ..errors import UserError
from ..present.output import emit
from ..store.runs import Store
from .common import add_output_options, add_run_argument, open_store

NAME = "cache"
HELP = "show the cache footprint, struct layout, cache model, scaling and constant-time projections"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="show|calibrate", required=True)
    show = sub.add_parser("show", help="print the projections of a cache run")
    add_run_argument(show)
    # also after `show`; SUPPRESS keeps a --store given before it
    show.add_argument("--store", default=argparse.SUPPRESS, help="the run store folder")
    add_output_options(show, ("text", "json"))
    measure = sub.add_parser(
        "calibrate",
        help="measure this machine's TLB reach and effective LLC (kept per machine for --scale)",
    )
    add_output_options(measure, ("text", "json"))


def run(args: argparse.Namespace) -> int:
    if args.action == "calibrate":
        return run_calibrate(args)
    store = open_store(args)
    run_id = store.resolve(args.run)
    doc = projections(store, run_id)
    if doc is None:
        raise UserError(no_projections(run_id))
    emit(doc, args.format, args.output, render)
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    result = calibrate.measure()
    path = calibrate.save(result)
    emit(result.to_json() | {"saved_to": str(path)}, args.format, args.output, render_calibration)
    return 0


def render_calibration(doc: dict[str, Any], console: Console) -> None:
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


def projections(store: Store, run_id: int) -> dict[str, Any] | None:
    """The document `cache show` prints (the web UI's too); None for a run without one."""
    functions = store.documents(run_id, DOCUMENT_KIND)
    if not functions:
        return None
    return {"run": str(run_id), "functions": [functions[name] for name in sorted(functions)]}


def no_projections(run_id: int) -> str:
    return (
        f"run {run_id} has no cache projections; record one with "
        "`perfsleuth record --mode cache --function FUNC -- CMD`"
    )


def render(doc: dict[str, Any], console: Console) -> None:
    for function in doc["functions"]:
        console.print(Text(f"== {function['function']} ({function['executable']})", style="bold"))
        render_footprint(function["footprint"], console)
        # runs recorded before globals were laid out have only "layout"
        for layout in function.get("layouts") or [function["layout"]]:
            render_layout(layout, console)
        render_model(function["model"], console)
        if "scaling" in function:
            render_scaling(function["scaling"], console)
        if "constant_time" in function:
            render_constant_time(function["constant_time"], console)
        console.print()


def render_footprint(fp: dict[str, Any], console: Console) -> None:
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


def render_layout(layout: dict[str, Any], console: Console) -> None:
    if not layout["available"]:
        console.print(Text(f"struct layout: not available: {layout['reason']}"))
        return
    console.print(
        Text(
            f"struct layout of {layout_owner(layout)}: "
            f"{layout['lines_touched_per_call']:.2f} of its cache lines touched per call"
            f"{' and element' if layout.get('elements', 1) > 1 else ''}"
        )
    )
    console.print(Text(layout["pahole"]))
    for row in layout["lines"]:
        mark = f"hot: {', '.join(row['hot_fields'])}" if row["hot_fields"] else "cold"
        console.print(Text(f"  line {row['line']}: {mark}"))
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


def layout_owner(layout: dict[str, Any]) -> str:
    """`*c (struct conn, 320 B)`, `static table[4096] (struct conn, 320 B per element, ...)`."""
    kind = layout.get("variable_kind", "parameter")
    struct = f"struct {layout['struct']}, {layout['size']} B"
    if kind == "parameter":
        return f"*{layout['parameter']} ({struct})"
    if layout["elements"] == 1:
        return f"{kind} {layout['variable']} ({struct})"
    return (
        f"{kind} {layout['variable']}[{layout['elements']}] ({struct} per element, "
        f"{layout['elements_touched']:,} elements reached)"
    )


def render_model(sim: dict[str, Any], console: Console) -> None:
    misses = ", ".join(f"{name} {value:.2f}" for name, value in sim["misses_per_call"].items())
    console.print(Text(f"cache model ({sim['describe']}): misses per call {misses}"))


def render_scaling(scale: dict[str, Any], console: Console) -> None:
    fit = scale["fit"]
    console.print(
        Text(
            f"scaling: working set = {fit['intercept_lines']:.0f} + {fit['lines_per_n']:.3f} * n "
            f"lines ({fit['bytes_per_n']:.1f} B per n; {fit['of'].replace('_', ' ')}; "
            f"{fit['touched_lines_per_n']:.3f} lines per n touched by the code), for n in "
            f"{scale['range'][0]:,}..{scale['range'][1]:,}"
        )
    )
    for run in scale["runs"]:
        misses = ", ".join(f"{k} {v:.2f}" for k, v in run["misses_per_call"].items())
        console.print(
            Text(
                f"  n={run['n']:,}: {run['data_lines']:,} lines touched, "
                f"{run['cached_lines']:,} cached; misses/call {misses}"
            )
        )
    for cliff in scale["cliffs"]:
        held = capacity(cliff, fit["of"])
        console.print(Text(f"  exceeds {cliff['level']} ({held}) at {where(cliff)}"))
    tlb = scale.get("tlb") or {"reason": "recorded before TLB cliffs were predicted"}
    if not tlb.get("available"):
        console.print(Text(f"  TLB: not predicted ({tlb['reason']})", style="dim"))
        return
    console.print(
        Text(
            f"  pages = {tlb['intercept_pages']:.0f} + {tlb['pages_per_n']:.4f} * n exceed the "
            f"TLB's measured reach ({tlb['reach_pages']:,} pages) at {where(tlb)}"
        )
    )


def capacity(cliff: dict[str, Any], fitted: str) -> str:
    """The level's capacity, measured or from sysfs, and what of it the working set
    can use; `fitted`: the working set of the fit shown above the cliffs."""
    held = f"{cliff['capacity_lines']:,} lines"
    if cliff.get("capacity_source") == "measured":
        nominal = cliff["nominal_n"]
        at = f"n = {nominal:,}" if nominal else "never"
        held = (
            f"{held} measured on this machine; sysfs's {cliff['nominal_capacity_lines']:,} "
            f"lines would put the cliff at {at}"
        )
    if cliff.get("working_set", fitted) != fitted:
        held += "; the lines touched: the prefetcher fills the next levels"
    return held + usable(cliff)


def usable(cliff: dict[str, Any]) -> str:
    """The part of the capacity the working set's lines can use, when their places
    in the page leave some of the level's sets empty."""
    if not limited_by_sets(cliff):
        return ""
    share = cliff["usable_share"]
    return f"; {cliff['usable_lines']:,} usable: the lines fill {share:.0%} of its sets' room"


def where(cliff: dict[str, Any]) -> str:
    if not cliff["n"]:
        return "never"
    return f"n = {cliff['n']:,}" + (" (inside the measured range)" if cliff["in_range"] else "")


def render_constant_time(ct: dict[str, Any], console: Console) -> None:
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
                f"{diff['what']} first at {diff['first_source'] or '?'}"
            )
        )
