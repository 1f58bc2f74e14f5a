"""perfsleuth compare -- CMD_A --vs CMD_B: interleaved A/B runs, ratio, CI and verdict."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import UserError
from ..experiments import result
from ..experiments.runner import METRICS, Side, choose_metric, measure, shell_or_argv
from ..present import formats_for, write
from .common import add_output_options, open_store, progress_display

NAME = "compare"
HELP = "A/B-compare two commands: interleaved runs, ratio with 95%% CI, verdict"
DOCUMENT = "compare"
SEPARATOR = "--vs"


def add_measure_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs", type=int, default=10, help="measured runs of each side (default: 10)"
    )
    parser.add_argument(
        "--warmup", type=int, default=1, help="unmeasured rounds first (default: 1)"
    )
    parser.add_argument(
        "--metric",
        choices=METRICS,
        help="time: wall clock (the default on a machine whose load is at most its cores); "
        "cpu: user+sys, steadier on a busy machine (the default when the load is higher); "
        "instructions: exact counts (perf stat, else valgrind)",
    )


def check_measure_options(args: argparse.Namespace) -> None:
    """Checks --runs and --warmup, and settles --metric (args.metric_notes: why, if chosen)."""
    if args.runs < 3:
        raise UserError("--runs must be at least 3: a confidence interval needs several pairs")
    if args.warmup < 0:
        raise UserError("--warmup must be 0 or more")
    args.metric, note = choose_metric(args.metric)
    args.metric_notes = [note] if note else []


def report_stored(store_root: object, name: str) -> None:
    print(f"perfsleuth: stored as experiment {name} in {store_root}/", file=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_measure_options(parser)
    add_output_options(parser, formats_for(DOCUMENT))
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD_A ARGS... --vs CMD_B ARGS...")


def split_commands(words: list[str]) -> tuple[list[str], list[str]]:
    if words and words[0] == "--":
        words = words[1:]
    if SEPARATOR not in words:
        raise UserError("usage: perfsleuth compare [options] -- CMD_A ARGS... --vs CMD_B ARGS...")
    at = words.index(SEPARATOR)
    a, b = words[:at], words[at + 1 :]
    if not a or not b:
        raise UserError("both sides need a command: -- CMD_A ... --vs CMD_B ...")
    return shell_or_argv(a), shell_or_argv(b)


def run(args: argparse.Namespace) -> int:
    check_measure_options(args)
    cmd_a, cmd_b = split_commands(args.cmd)
    with progress_display(args) as progress:
        sides = [Side("A", cmd_a), Side("B", cmd_b)]
        series = measure(sides, args.runs, args.warmup, args.metric, progress)
    failed = result.failures(series)
    comparison = result.paired(series[0], series[1], args.metric)
    doc: dict[str, Any] = {
        **result.comparison_json(comparison),
        "metric": args.metric,
        "a": result.side_summary(series[0]),
        "b": result.side_summary(series[1]),
        "failed": failed,
        "notes": args.metric_notes,
    }
    store = open_store(args)
    doc["experiment"] = result.store_experiment(
        store, 0, "compare", {**doc, "warmup": args.warmup, "raw": result.raw_runs(series)}
    )
    report_stored(store.root, doc["experiment"])
    write(DOCUMENT, doc, args.format, args.output)
    return 0
