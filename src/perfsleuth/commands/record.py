"""perfsleuth record: run a command under a recorder and store the run."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..collect import RECORDERS, recorder
from ..collect.options import (
    MAX_CALLS,
    MAX_SAMPLE_INTERVAL,
    MAX_TRACE_SECONDS,
    MAX_TRACED_CALLS,
    SAMPLE_AUTO,
    TRACE_SECONDS,
    RecordOptions,
)
from ..cpu_cache_projections import model as cache_model
from ..errors import UserError
from ..present import write
from ..present.json import RECORDED
from ..store import kept_counts
from .common import add_output_options, amount, count_listing, keep_ui_answers, progress_display

# The analyzers, the python-mode probe, the store and the recorders' helpers are imported
# where a recording needs them: `record --help` and `run --help` paid ~0.27 CPU-s at
# load 10 for them (issue 29: any command under 0.3 CPU-s).
TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from ..model.profile import Profile
    from ..model.run import RunInfo
    from ..store.runs import Store

NAME = "record"
HELP = "record a command (or a running process) into the store"

UNNAMED_WARNING_SHARE = 0.2


def add_record_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mode",
        choices=sorted(RECORDERS),
        help="what to measure (default: python for a CPython command or process, else cpu)",
    )
    parser.add_argument(
        "--freq",
        type=positive_int("a frequency in Hz"),
        metavar="HZ",
        help="sampling frequency (1 or more)",
    )
    parser.add_argument(
        "--call-graph",
        choices=("auto", "fp", "dwarf"),
        default="auto",
        help="stack unwinding; auto picks fp when the binary keeps frame pointers, else dwarf",
    )
    parser.add_argument(
        "--pid", type=positive_int("a process id"), help="attach to a running process instead"
    )
    parser.add_argument(
        "--duration", type=float, metavar="S", help="seconds to record with --pid (default 10)"
    )
    add_count_options(parser)
    add_cache_options(parser)
    parser.add_argument(
        "--fallback-wall",
        action="store_true",
        help="offcpu mode: take wall-clock snapshots when eBPF is not available (no root)",
    )
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")


def positive_int(what: str) -> Callable[[str], int]:
    """An argparse type: a whole number of 1 or more, else one line saying so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} (a whole number, 1 or more)")
        return value

    return parse


def bounded_int(what: str, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from 1 to high, else one line saying so."""
    parse_positive = positive_int(what)

    def parse(text: str) -> int:
        value = parse_positive(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"{text!r} is more than {high:,} ({what})")
        return value

    return parse


def sample_calls(text: str) -> int:
    """--sample-calls: 'auto' or 1 in K calls."""
    if text == "auto":
        return SAMPLE_AUTO
    return bounded_int("'auto' or a sampling interval K", MAX_SAMPLE_INTERVAL)(text)


def add_count_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("count mode (exact instruction counts under valgrind)")
    group.add_argument("--cache-sim", action="store_true", help="also simulate I1/D1/LL misses")
    group.add_argument("--only", metavar="FUNC", help="count only inside FUNC and its callees")
    group.add_argument(
        "--keep-env", action="store_true", help="pass your environment through (default: fixed)"
    )


def add_cache_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cache mode (per-call memory traces under valgrind)")
    group.add_argument(
        "--function", metavar="FUNC", help="function to trace (default: the hottest)"
    )
    group.add_argument(
        "--max-calls",
        type=bounded_int("a number of calls", MAX_TRACED_CALLS),
        default=MAX_CALLS,
        metavar="N",
        help=f"calls to keep accesses of (default {MAX_CALLS}, at most {MAX_TRACED_CALLS:,})",
    )
    group.add_argument(
        "--sample-calls",
        type=sample_calls,
        default=SAMPLE_AUTO,
        metavar="K|auto",
        help="trace 1 in K calls (1: the first N calls; default auto: K grows as the run "
        "goes on, keeping N to 2N calls spread over the whole run)",
    )
    group.add_argument(
        "--trace-seconds",
        type=bounded_int("a number of seconds", MAX_TRACE_SECONDS),
        default=int(TRACE_SECONDS),
        metavar="S",
        help=f"stop a sampled run after S seconds (default {TRACE_SECONDS:.0f})",
    )
    group.add_argument("--scale", metavar="'n=A,B,C'", help="run CMD once per n ({n} in CMD)")
    group.add_argument("--variants", metavar="FILE", help="secrets, one a line ({secret} in CMD)")
    group.add_argument(
        "--cache-model", metavar="SPEC", help=f"cache geometry, e.g. {cache_model.SPEC_HELP}"
    )


def record_options(args: argparse.Namespace) -> RecordOptions:
    """The recorders' options from the command line (the CLI namespace stops here)."""
    return RecordOptions(
        mode=args.mode or default_mode(args.cmd, args.pid),
        freq=args.freq,
        call_graph=args.call_graph,
        pid=args.pid,
        duration=args.duration,
        fallback_wall=args.fallback_wall,
        cache_sim=args.cache_sim,
        only=args.only,
        keep_env=args.keep_env,
        function=args.function,
        max_calls=args.max_calls,
        sample_calls=args.sample_calls,
        trace_seconds=float(args.trace_seconds),
        scale=args.scale,
        variants=args.variants,
        cache_model=args.cache_model,
    )


def default_mode(cmd: list[str], pid: int | None) -> str:
    """python for a CPython interpreter (docs/python.md says how it is told), else cpu."""
    from ..collect import python

    cmd = cmd[1:] if cmd[:1] == ["--"] else cmd
    found = python.is_python_process(pid) if pid is not None else python.is_python_command(cmd)
    return "python" if found else "cpu"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_record_options(parser)
    add_output_options(parser, ("text", "json"))


def command_of(args: argparse.Namespace) -> list[str]:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.pid is None and not cmd:
        raise UserError(f"no command given; usage: perfsleuth {args.command} -- CMD ARGS...")
    if args.pid is not None and cmd:
        raise UserError("give either --pid P or a command, not both")
    if args.duration is not None and args.duration <= 0:
        raise UserError("--duration must be a positive number of seconds")
    return cmd


def attached_label(pid: int) -> str:
    """'CMDLINE (pid P)' for a process we attach to; the PID alone if it is unreadable."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return f"--pid {pid}"
    return f"{shlex.join(a.decode(errors='replace') for a in argv)} (pid {pid})"


def record_run(args: argparse.Namespace) -> tuple[Store, RunInfo, Profile]:
    """Record per the options and store the run; returns what was stored."""
    from ..store.runs import Store

    cmd = command_of(args)
    with progress_display(args) as progress:
        options = replace(record_options(args), progress=progress)
        return store_recording(Store(args.store), options, cmd)


def store_recording(
    store: Store, options: RecordOptions, cmd: list[str]
) -> tuple[Store, RunInfo, Profile]:
    """Record CMD (or options.pid) in options.mode and store the run."""
    from ..collect import run_facts
    from ..collect.target import recording_dir

    label = shlex.join(cmd) if cmd else attached_label(options.pid or 0)
    source = run_facts.OWN_COMMAND if cmd else run_facts.ATTACHED
    facts = run_facts.new_run(label, options.mode, source=source)
    with recording_dir() as tmp:
        recording = recorder(options.mode)(options, cmd, tmp)
    options.progress.phase("storing the run")
    info = store.add_run(facts, recording)
    keep_ui_answers(store, info, options.progress, recording.profile)
    kept_counts.keep_recorded(store, info, recording, count_listing)
    profile = recording.profile
    print(
        f"perfsleuth: stored run {info.id} ({amount(profile)}"
        f"{_duration(info)}) in {store.root}/; `perfsleuth top` shows it",
        file=sys.stderr,
    )
    return store, info, profile


def _duration(info: RunInfo) -> str:
    took = f", {info.duration_s:.2f} s" if info.duration_s is not None else ""
    failed = f"; the command exited with status {info.exit_status}" if info.exit_status else ""
    return took + failed


def warn_missing_symbols(info: RunInfo, profile: Profile) -> None:
    """A run whose samples mostly have no function name is worth a word right away,
    unless a hot library holds them (hot_library names and sizes it by its file)."""
    from ..analyzers import Context, missing_symbols

    ctx = Context(profile=profile, run=info, binaries=info.dsos)
    for finding in missing_symbols.analyze(ctx):
        blind = finding.details.get("blind_share", finding.share)
        if finding.rule == "symbols.missing" and blind >= UNNAMED_WARNING_SHARE:
            print(f"perfsleuth: warning: {finding.title}. {finding.suggestion}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    _store, info, profile = record_run(args)
    warn_missing_symbols(info, profile)
    if args.format == "json":
        doc = {**info.summary(), "samples": profile.num_samples, "unit": profile.unit}
        write(RECORDED, doc, "json", args.output)
    return info.exit_status or 0
