"""perfsleuth record: run a command under a recorder and store the run."""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..analyzers import Context, missing_symbols
from ..collect import cache as cache_recorder
from ..collect import offcpu, perf, valgrind, wall
from ..collect import run_facts as runinfo
from ..errors import UserError
from ..formats import perf_data
from ..model.profile import Profile
from ..model.run import RunInfo
from ..present.output import emit
from ..store.runs import Store
from .common import add_output_options

NAME = "record"
HELP = "record a command (or a running process) into the store"

UNNAMED_WARNING_SHARE = 0.2

# mode -> function(args, command, workdir, info) -> Profile; it fills info's
# exit_status, duration_s, dsos and meta. Each mode's recorder lives in collect/.
Recorder = Callable[[argparse.Namespace, list[str], Path, RunInfo], Profile]


def record_cpu(args: argparse.Namespace, cmd: list[str], workdir: Path, info: RunInfo) -> Profile:
    rec = perf.record(
        cmd or None,
        workdir / "perf.data",
        freq=args.freq,
        call_graph=args.call_graph,
        pid=args.pid,
        duration=args.duration,
    )
    info.exit_status = rec.exit_status
    info.duration_s = rec.duration_s
    profile = perf_data.read(rec.data)
    # Every on-CPU sample is, by definition, of a running thread.
    profile.sample_state = ["running"] * len(profile.sample_state)
    info.dsos = profile.meta.pop("dsos", [])
    info.meta.update({"call_graph": rec.call_graph, "freq": rec.freq, "recorder": "perf"})
    return profile


RECORDERS: dict[str, Recorder] = {"cpu": record_cpu, "count": valgrind.record_count}
RECORDERS.update(offcpu=offcpu.record_offcpu, wall=wall.record_wall, all=offcpu.record_all)
RECORDERS["cache"] = cache_recorder.record_cache


def add_record_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mode", choices=sorted(RECORDERS), default="cpu", help="what to measure (default: cpu)"
    )
    parser.add_argument("--freq", type=int, metavar="HZ", help="sampling frequency")
    parser.add_argument(
        "--call-graph",
        choices=("auto", "fp", "dwarf"),
        default="auto",
        help="stack unwinding; auto picks fp when the binary keeps frame pointers, else dwarf",
    )
    parser.add_argument("--pid", type=int, help="attach to a running process instead")
    parser.add_argument(
        "--duration", type=float, metavar="S", help="seconds to record with --pid (default 10)"
    )
    add_count_options(parser)
    cache_recorder.add_options(parser)
    parser.add_argument(
        "--fallback-wall",
        action="store_true",
        help="offcpu mode: take wall-clock snapshots when eBPF is not available (no root)",
    )
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")


def add_count_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("count mode (exact instruction counts under valgrind)")
    group.add_argument("--cache-sim", action="store_true", help="also simulate I1/D1/LL misses")
    group.add_argument("--only", metavar="FUNC", help="count only inside FUNC and its callees")
    group.add_argument(
        "--keep-env", action="store_true", help="pass your environment through (default: fixed)"
    )


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
    cmd = command_of(args)
    label = shlex.join(cmd) if cmd else attached_label(args.pid)
    info = runinfo.new_run(label, args.mode)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-") as tmp:
        profile = RECORDERS[args.mode](args, cmd, Path(tmp), info)
    store = Store(args.store)
    store.add_run(info, profile)
    print(
        f"perfsleuth: stored run {info.id} ({_amount(profile)}"
        f"{_duration(info)}) in {store.root}/; `perfsleuth top` shows it",
        file=sys.stderr,
    )
    return store, info, profile


def _amount(profile: Profile) -> str:
    if profile.unit == "instructions":  # count mode: exact, not sampled
        return f"{profile.total:,.0f} instructions"
    return f"{profile.num_samples:,} samples"


def _duration(info: RunInfo) -> str:
    return f", {info.duration_s:.2f} s" if info.duration_s is not None else ""


def warn_missing_symbols(info: RunInfo, profile: Profile) -> None:
    """A run whose samples mostly have no function name is worth a word right away."""
    ctx = Context(profile=profile, run=info, binaries=info.dsos)
    for finding in missing_symbols.analyze(ctx):
        if finding.rule == "symbols.missing" and finding.share >= UNNAMED_WARNING_SHARE:
            print(f"perfsleuth: warning: {finding.title}. {finding.suggestion}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    _store, info, profile = record_run(args)
    warn_missing_symbols(info, profile)
    if args.format == "json":
        doc = {**info.summary(), "samples": profile.num_samples, "unit": profile.unit}
        emit(doc, "json", args.output, lambda d, c: None)
    return info.exit_status or 0
