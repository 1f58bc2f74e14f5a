"""`perfsleuth record --mode cache`: trace a function's accesses, compute the
projections, and keep them with the run as documents.

Without --function the command is first profiled on the CPU and the functions of
the program's own executable that carry its memory traffic are traced
(`hot_functions`, ranking-for-analysis); the
run then keeps that CPU profile, so the advisor ranks the cache findings by time.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cpu_cache_projections import calibrate, footprint, layout, model, scaling
from ..cpu_cache_projections import secret_variants as constant_time
from ..cpu_cache_projections.trace import PAGE_SIZE, Trace
from ..errors import UserError
from ..formats import perf_data
from ..model.cpu_cache import (
    CacheProjections,
    ConstantTime,
    Limits,
    MeasuredRun,
    Sampling,
    Scaling,
    few_calls_text,
    sampling_text,
)
from ..model.profile import Frame, Profile, ProfileBuilder
from ..model.run import Recording, StoredDocument
from ..symbols.symbolizer import ElfSymbols, dso_name, elf_symbols, strip_params
from . import memtrace, perf
from .cache_trace import find_target, from_recording, never_called_message, stripped_message
from .options import RecordOptions
from .valgrind import resolve_program

HOT_FUNCTIONS = 2  # traced when no --function is given
MIN_HOT_SHARE = 0.05
NOT_TRACED = frozenset({"main"})  # its accesses are its callees': tracing it is tracing all


@dataclass
class TargetRuns:
    """What the traced runs of the target add up to: the last exit status, the time."""

    exit_status: int | None = None
    duration_s: float = 0.0
    tracer: str = ""  # fntrace, or lackey where that tool cannot be built


def record_cache(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    if options.pid is not None:
        raise UserError("cache mode runs the program under valgrind; it cannot attach to --pid")
    if options.max_calls is None or options.max_calls <= 0:
        raise UserError("--max-calls must be a positive number of calls")
    geometry = (
        model.parse_spec(options.cache_model) if options.cache_model else model.machine_geometry()
    )
    sizes = scaling.parse_scale(options.scale) if options.scale else []
    variants = constant_time.read_variants(options.variants) if options.variants else []
    if sizes:
        scaling.check_placeholder(cmd)
    first_cmd = scaling.substitute(cmd, sizes[0]) if sizes else cmd
    first_cmd = constant_time.substitute(first_cmd, variants[0])[0] if variants else first_cmd
    executable = resolve_program(first_cmd)
    profile = None
    functions = [options.function] if options.function else []
    if not functions:
        profile, functions = profile_hot_functions(options, first_cmd, workdir, executable)
    runs = TargetRuns()
    traced = [
        project_function(
            options, cmd, find_target(executable, function), geometry, sizes, variants, runs
        )
        for function in functions
    ]
    documents = [StoredDocument(p.KIND, p.function, p) for p in traced]
    if profile is None:
        profile = instruction_profile(traced)
    return Recording(
        profile,
        exit_status=runs.exit_status,
        duration_s=runs.duration_s,
        meta={"recorder": runs.tracer, "executable": executable, "functions": functions},
        documents=documents,
    )


def profile_hot_functions(
    options: RecordOptions, cmd: list[str], workdir: Path, executable: str
) -> tuple[Profile, list[str]]:
    print("perfsleuth: profiling first to find the hot functions", file=sys.stderr)
    options.progress.phase(f"profiling {cmd[0]} to find its hot functions")
    rec = perf.record(cmd, workdir / "perf.data", freq=options.freq, call_graph=options.call_graph)
    profile = perf_data.read(rec.data)
    functions = hot_functions(profile, executable)
    if not functions and (stripped := stripped_message(executable)):
        raise UserError(stripped)
    if not functions:
        raise UserError(
            f"no function of {executable} has {MIN_HOT_SHARE:.0%} of the CPU time; "
            "name one with --function FUNC"
        )
    print(f"perfsleuth: tracing {', '.join(functions)}", file=sys.stderr)
    return profile, functions


def hot_functions(profile: Profile, executable: str) -> list[str]:
    """The program's own functions whose calls carry the memory traffic: of those with
    MIN_HOT_SHARE of the time (their own and their library callees'), hottest first,
    only those that take a pointer to a struct when some do (a set-up function called
    once would be a trace of everything it does); never `main` or a function that
    spends most of its time in the program's own callees (a loop around calls)."""
    own, loops = own_time(profile, executable)
    hot = [
        name
        for name, share in own.items()
        if share >= MIN_HOT_SHARE and name not in NOT_TRACED and loops.get(name, 0.0) <= share
    ]
    ranked = sorted(hot, key=lambda name: -own[name])
    with_structs = [name for name in ranked if takes_struct_pointer(executable, name)]
    return (with_structs or ranked)[:HOT_FUNCTIONS]


def own_time(profile: Profile, executable: str) -> tuple[dict[str, float], dict[str, float]]:
    """Per function of the executable, the share of the time where it is the innermost
    of its own functions on the stack (library callees included), and the share
    where it is on the stack below another of them."""
    dso = dso_name(executable)
    symbols = elf_symbols(executable)
    total = profile.total or 1.0
    own: dict[str, float] = {}
    below: dict[str, float] = {}
    for stack, weight, _count, _thread, _state in profile.rows():
        frames = (profile.frames[i] for i in stack)
        names = [
            name
            for f in frames
            if not f.inlined and f.dso == dso and (name := traceable_name(symbols, f.function))
        ]
        if not names:
            continue
        own[names[0]] = own.get(names[0], 0.0) + weight / total
        for name in set(names[1:]) - {names[0]}:
            below[name] = below.get(name, 0.0) + weight / total
    return own, below


def traceable_name(symbols: ElfSymbols, function: str) -> str:
    """The name a frame's function is traced by: as the profile spells it, or without
    its parameters (llvm-symbolizer writes `>>` where c++filt, whose spelling the ELF
    names are matched in, writes `> >`: `lookup_session(std::unordered_map<...>
    const&, unsigned long)` was no function of the program); "" when neither is."""
    for name in (function, strip_params(function)):
        if symbols.address_of(name) is not None:
            return name
    return ""


def takes_struct_pointer(executable: str, function: str) -> bool:
    return bool(layout.parameter_structs(executable, function)[0])


def project_function(
    options: RecordOptions,
    cmd: list[str],
    target: memtrace.Target,
    geometry: model.Geometry,
    sizes: list[int],
    variants: list[str],
    runs: TargetRuns,
) -> CacheProjections:
    scaled: Scaling | None = None
    verdict: ConstantTime | None = None
    if sizes:  # the model's misses then with the LLC size the cliffs use
        main, scaled, geometry = scaled_traces(options, cmd, target, geometry, sizes, runs)
    elif variants:
        traces = [
            trace_once(
                options, (args, text), target, runs, sample_every=1, extra_env=env, uncalled=True
            )
            for args, text, env in constant_time.runs(cmd, variants)
        ]
        called = [t for t in traces if t.calls]
        if not called:  # with no secret: not the secret's doing
            raise UserError(never_called_message(target.executable, target.function))
        main = called[0]
        verdict = constant_time.project(traces)
    else:
        main = trace_once(options, (cmd, None), target, runs)
    first_layout, layouts = layout.project(main)
    traced = sampling(options, main)
    if sampling_text(traced):
        print(f"perfsleuth: {target.function}: {sampling_text(traced)}", file=sys.stderr)
    return CacheProjections(
        function=target.function,
        executable=target.executable,
        footprint=footprint.project(main),
        layout=first_layout,
        layouts=layouts,
        model=model.simulate(main, geometry),
        sampling=traced,
        scaling=scaled,
        constant_time=verdict,
    )


def sampling(options: RecordOptions, trace: Trace) -> Sampling:
    """Which calls the trace holds."""
    return {
        "chosen": trace.chosen,
        "every": trace.sample_every,
        "calls_seen": trace.total_calls,
        "calls_traced": len(trace.calls),
        "budget_s": options.trace_seconds if trace.chosen != "first" else None,
        "out_of_time": trace.out_of_time,
    }


def trace_once(
    options: RecordOptions,
    cmd_and_input: tuple[list[str], str | None],
    target: memtrace.Target,
    runs: TargetRuns,
    **tracing: Any,
) -> Trace:
    cmd, stdin_text = cmd_and_input
    line_size = tracing.pop("line_size", 64)
    uncalled = tracing.pop("uncalled", False)  # --variants: a secret may skip the function
    if "run_to_end" in tracing:  # --scale: the model sees every call
        tracing["sample_every"] = 1
    sample_every = tracing.setdefault("sample_every", options.sample_calls)
    budget = options.trace_seconds if sample_every != 1 else None
    options.progress.phase(f"tracing the calls of {target.function}", total=options.max_calls)
    rec = memtrace.record(
        cmd,
        target,
        max_calls=options.max_calls,
        line_size=line_size,
        stdin_text=stdin_text,
        progress=options.progress,
        budget_s=budget,
        **tracing,
    )
    if rec.total_calls == 0 and not uncalled:
        raise UserError(never_called_message(target.executable, target.function))
    runs.exit_status = rec.exit_status
    runs.tracer = rec.tracer
    runs.duration_s += rec.duration_s
    if rec.out_of_time:
        print(
            f"perfsleuth: stopped {cmd[0]} after {options.trace_seconds:g} s of tracing "
            f"(--trace-seconds), {rec.total_calls:,} calls of {target.function} seen",
            file=sys.stderr,
        )
    elif rec.stopped_early:
        print(
            f"perfsleuth: stopped {cmd[0]} after {options.max_calls} calls of {target.function} "
            "(--max-calls)",
            file=sys.stderr,
        )
    return from_recording(target, rec, line_size)


def scaled_traces(
    options: RecordOptions,
    cmd: list[str],
    target: memtrace.Target,
    geometry: model.Geometry,
    sizes: list[int],
    target_runs: TargetRuns,
) -> tuple[Trace, Scaling, model.Geometry]:
    """Each n runs to its end, the model watching every data access with the geometry
    returned (the LLC at its calibrated size)."""
    runs: list[MeasuredRun] = []
    first = None
    limits = measured_limits(geometry)
    simulated = scaling.model_geometry(geometry, limits.get("llc") or {})
    for n in sizes:
        cache = model.CacheModel(simulated)
        trace = trace_once(
            options,
            (scaling.substitute(cmd, n), None),
            target,
            target_runs,
            run_to_end=True,
            observer=cache.observe,
            line_size=geometry.line_size,
        )
        first = first or trace
        misses = {lv.name: m for lv, m in zip(simulated.levels, cache.misses, strict=True)}
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
                "first_touches": cache.first_touches,
            }
        )
    assert first is not None
    projected = scaling.project(runs, geometry, limits)
    if warning := few_calls_text(projected):
        print(f"perfsleuth: {target.function}: warning: {warning}", file=sys.stderr)
    return first, projected, simulated


def line_offsets(lines: set[int], line_size: int) -> list[int]:
    """How many of these lines sit at each line index of their 4 KiB page."""
    per_page = PAGE_SIZE // line_size
    counts = [0] * per_page
    for line in lines:
        counts[line % per_page] += 1
    return counts


def measured_limits(geometry: model.Geometry) -> Limits:
    """This machine's calibration; its LLC only stands for the machine's own caches,
    not for a geometry given with --cache-model."""
    limits = calibrate.limits()
    if geometry != model.machine_geometry():
        limits["llc"] = {"reason": "--cache-model gave the geometry: its LLC size is used as is"}
    return limits


def instruction_profile(traced: list[CacheProjections]) -> Profile:
    """Memory accesses per source line of the traced calls, so `top` has something to show."""
    builder = ProfileBuilder(unit="accesses", meta={"format": "lackey"})
    for projections in traced:
        dso = dso_name(projections.executable)
        calls = projections.footprint["calls_recorded"]
        for row in projections.footprint["by_source"]:
            file, _, line = row["source"].rpartition(":")
            frame = Frame(
                projections.function, dso=dso, file=file, line=int(line) if line.isdigit() else 0
            )
            builder.add([frame], row["accesses_per_call"] * calls)
    return builder.build()
