"""`perfsleuth record --mode cache`: trace a function's accesses, compute the
projections, and keep them with the run as documents.

Without --function the command is first profiled on the CPU and its hottest
functions of the program's own executable are traced (ranking-for-analysis); the
run then keeps that CPU profile, so the advisor ranks the cache findings by time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cpucache import DOCUMENT_KIND, calibrate, footprint, layout, model, scaling
from ..cpucache import secret_variants as constant_time
from ..cpucache.trace import PAGE_SIZE, Trace, find_target, from_recording, never_called_message
from ..errors import UserError
from ..formats import perf_data
from ..model.profile import Frame, Profile, ProfileBuilder
from ..model.run import RunInfo
from ..symbols.symbolizer import dso_name, elf_symbols
from . import memtrace, perf
from .valgrind import resolve_program

HOT_FUNCTIONS = 2  # traced when no --function is given
MIN_HOT_SHARE = 0.05


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cache mode (per-call memory traces under valgrind)")
    group.add_argument(
        "--function", metavar="FUNC", help="function to trace (default: the hottest)"
    )
    group.add_argument(
        "--max-calls",
        type=int,
        default=200,
        metavar="N",
        help="calls to keep accesses of (default 200)",
    )
    group.add_argument("--scale", metavar="'n=A,B,C'", help="run CMD once per n ({n} in CMD)")
    group.add_argument("--variants", metavar="FILE", help="secrets, one a line ({secret} in CMD)")
    group.add_argument(
        "--cache-model", metavar="SPEC", help=f"cache geometry, e.g. {model.SPEC_HELP}"
    )


def record_cache(args: argparse.Namespace, cmd: list[str], workdir: Path, info: RunInfo) -> Profile:
    if args.pid is not None:
        raise UserError("cache mode runs the program under valgrind; it cannot attach to --pid")
    if args.max_calls is None or args.max_calls <= 0:
        raise UserError("--max-calls must be a positive number of calls")
    geometry = model.parse_spec(args.cache_model) if args.cache_model else model.machine_geometry()
    sizes = scaling.parse_scale(args.scale) if args.scale else []
    variants = constant_time.read_variants(args.variants) if args.variants else []
    if sizes:
        scaling.check_placeholder(cmd)
    first_cmd = scaling.substitute(cmd, sizes[0]) if sizes else cmd
    first_cmd = constant_time.substitute(first_cmd, variants[0])[0] if variants else first_cmd
    executable = resolve_program(first_cmd)
    profile = None
    functions = [args.function] if args.function else []
    if not functions:
        profile, functions = profile_hot_functions(args, first_cmd, workdir, info, executable)
    documents = []
    for function in functions:
        target = find_target(executable, function)
        projections = project_function(args, cmd, target, geometry, sizes, variants, info)
        documents.append((DOCUMENT_KIND, function, projections))
    info.meta.update({"recorder": "lackey", "executable": executable, "functions": functions})
    info.documents.extend(documents)
    if profile is None:
        profile = instruction_profile(documents)
    return profile


def profile_hot_functions(
    args: argparse.Namespace, cmd: list[str], workdir: Path, info: RunInfo, executable: str
) -> tuple[Profile, list[str]]:
    print("perfsleuth: profiling first to find the hot functions", file=sys.stderr)
    rec = perf.record(cmd, workdir / "perf.data", freq=args.freq, call_graph=args.call_graph)
    profile = perf_data.read(rec.data)
    info.dsos = profile.meta.pop("dsos", [])
    functions = hot_functions(profile, executable)
    if not functions:
        raise UserError(
            f"no function of {executable} has {MIN_HOT_SHARE:.0%} of the CPU time; "
            "name one with --function FUNC"
        )
    print(f"perfsleuth: tracing {', '.join(functions)}", file=sys.stderr)
    return profile, functions


def hot_functions(profile: Profile, executable: str) -> list[str]:
    """The program's own functions with the most self time, hottest first."""
    own = dso_name(executable)
    symbols = elf_symbols(executable)
    share: dict[str, float] = {}
    total = profile.total or 1.0
    for stack, weight, _count, _thread, _state in profile.rows():
        leaf = next((f for f in (profile.frames[i] for i in stack) if not f.inlined), None)
        if leaf is not None and leaf.dso == own and symbols.address_of(leaf.function) is not None:
            share[leaf.function] = share.get(leaf.function, 0.0) + weight / total
    ranked = sorted(share, key=lambda name: -share[name])
    return [name for name in ranked if share[name] >= MIN_HOT_SHARE][:HOT_FUNCTIONS]


def project_function(
    args: argparse.Namespace,
    cmd: list[str],
    target: memtrace.Target,
    geometry: model.Geometry,
    sizes: list[int],
    variants: list[str],
    info: RunInfo,
) -> dict[str, Any]:
    doc: dict[str, Any] = {"function": target.function, "executable": target.executable}
    if sizes:
        main, doc["scaling"] = scaled_traces(args, cmd, target, geometry, sizes, info)
    elif variants:
        traces = [
            trace_once(args, constant_time.substitute(cmd, v), target, info) for v in variants
        ]
        main, doc["constant_time"] = traces[0], constant_time.project(traces)
    else:
        main = trace_once(args, (cmd, None), target, info)
    doc["footprint"] = footprint.project(main)
    doc.update(layout.project(main))  # "layout" and "layouts"
    doc["model"] = model.simulate(main, geometry)
    return doc


def trace_once(
    args: argparse.Namespace,
    cmd_and_input: tuple[list[str], str | None],
    target: memtrace.Target,
    info: RunInfo,
    **options: Any,
) -> Trace:
    cmd, stdin_text = cmd_and_input
    line_size = options.pop("line_size", 64)
    rec = memtrace.record(
        cmd, target, max_calls=args.max_calls, line_size=line_size, stdin_text=stdin_text, **options
    )
    if rec.total_calls == 0:
        raise UserError(never_called_message(target.executable, target.function))
    info.exit_status = rec.exit_status
    info.duration_s = (info.duration_s or 0.0) + rec.duration_s
    if rec.stopped_early:
        print(
            f"perfsleuth: stopped {cmd[0]} after {args.max_calls} calls of {target.function} "
            "(--max-calls)",
            file=sys.stderr,
        )
    return from_recording(target, rec, line_size)


def scaled_traces(
    args: argparse.Namespace,
    cmd: list[str],
    target: memtrace.Target,
    geometry: model.Geometry,
    sizes: list[int],
    info: RunInfo,
) -> tuple[Trace, dict[str, Any]]:
    """Each n runs to its end, the model watching every data access."""
    runs, first = [], None
    for n in sizes:
        cache = model.CacheModel(geometry)
        trace = trace_once(
            args,
            (scaling.substitute(cmd, n), None),
            target,
            info,
            run_to_end=True,
            observer=cache.observe,
            line_size=geometry.line_size,
        )
        first = first or trace
        misses = {lv.name: m for lv, m in zip(geometry.levels, cache.misses, strict=True)}
        runs.append(
            {
                "n": n,
                "data_lines": trace.data_lines,
                "data_pages": trace.data_pages,
                "cached_lines": len(cache.filled),
                "line_offsets": line_offsets(cache.filled, geometry.line_size),
                "touched_offsets": line_offsets(cache.touched, geometry.line_size),
                "calls": trace.total_calls,
                "misses": misses,
            }
        )
    assert first is not None
    return first, scaling.project(runs, geometry, measured_limits(geometry))


def line_offsets(lines: set[int], line_size: int) -> list[int]:
    """How many of these lines sit at each line index of their 4 KiB page."""
    per_page = PAGE_SIZE // line_size
    counts = [0] * per_page
    for line in lines:
        counts[line % per_page] += 1
    return counts


def measured_limits(geometry: model.Geometry) -> dict[str, dict[str, Any]]:
    """This machine's calibration; its LLC only stands for the machine's own caches,
    not for a geometry given with --cache-model."""
    limits = calibrate.limits()
    if geometry != model.machine_geometry():
        limits["llc"] = {"reason": "--cache-model gave the geometry: its LLC size is used as is"}
    return limits


def instruction_profile(documents: list[tuple[str, str, dict[str, Any]]]) -> Profile:
    """Instructions per source line of the traced calls, so `top` has something to show."""
    builder = ProfileBuilder(unit="instructions", meta={"format": "lackey"})
    for _kind, function, doc in documents:
        dso = dso_name(doc["executable"])
        for row in doc["footprint"]["by_source"]:
            file, _, line = row["source"].rpartition(":")
            frame = Frame(function, dso=dso, file=file, line=int(line) if line.isdigit() else 0)
            builder.add([frame], row["accesses_per_call"] * doc["footprint"]["calls_recorded"])
    return builder.build()
