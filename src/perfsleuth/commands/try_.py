"""perfsleuth try allocator|build -- CMD: zero-code-change experiments against a baseline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import UserError
from ..experiments import allocator, build, result
from ..experiments.render import render_try
from ..experiments.runner import Side, measure, shell_or_argv
from ..output import emit
from ..store import Store
from .common import add_output_options, open_store
from .compare import add_measure_options, check_measure_options, progress_printer, report_stored

NAME = "try"
HELP = "try other allocators (LD_PRELOAD) or build flags (O3, LTO, PGO...) on a workload"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("experiment", choices=("allocator", "build"), help="what to try")
    parser.add_argument(
        "--allocators",
        metavar="LIST",
        help="allocator: comma-separated subset of mimalloc,jemalloc,tcmalloc (default: all)",
    )
    parser.add_argument(
        "--build",
        metavar="SHELL_CMD",
        help="build: the command that builds the program into $OUT using "
        "$CFLAGS/$CXXFLAGS/$LDFLAGS",
    )
    parser.add_argument(
        "--variants",
        metavar="LIST",
        help=f"build: comma-separated, from {','.join(build.VARIANTS)} "
        f"(default: {','.join(build.DEFAULT_VARIANTS)})",
    )
    add_measure_options(parser)
    add_output_options(parser, ("text", "json"))
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS... (the workload)")


def workload(args: argparse.Namespace) -> list[str]:
    words = list(args.cmd)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise UserError(f"no command given; usage: perfsleuth try {args.experiment} -- CMD ARGS...")
    return shell_or_argv(words)


def allocator_sides(args: argparse.Namespace, cmd: list[str]) -> tuple[list[Side], dict[str, Any]]:
    names = args.allocators.split(",") if args.allocators else None
    p = allocator.plan(cmd, names)
    extra: dict[str, Any] = {"preload_checks": p.preload_checks, "refused": p.refused}
    if p.missing:
        extra["missing"] = {
            "allocators": [a.name for a in p.missing],
            "install": allocator.install_command(p.missing),
        }
    notes = []
    if p.missing:
        names_missing = ", ".join(a.name for a in p.missing)
        notes.append(
            f"not installed: {names_missing}; install with `{extra['missing']['install']}`"
        )
    if len(p.sides) == 1:
        why = [f"{name}: {reason}" for name, reason in p.refused.items()] + notes
        raise UserError("no allocator to try: " + "; ".join(why))
    extra["notes"] = notes
    return p.sides, extra


def build_sides(
    args: argparse.Namespace, cmd: list[str], store: Store
) -> tuple[list[Side], dict[str, Any]]:
    if not args.build:
        raise UserError("try build needs --build 'SHELL COMMAND' that builds the program into $OUT")
    variants = build.parse_variants(args.variants)
    p = build.plan(args.build, variants, cmd, store.root / "builds")
    return p.sides, {"build": args.build, "refused": p.refused, "notes": p.notes}


def run(args: argparse.Namespace) -> int:
    check_measure_options(args)
    cmd = workload(args)
    if args.experiment == "allocator" and (args.build or args.variants):
        raise UserError("--build and --variants belong to `try build`")
    if args.experiment == "build" and args.allocators:
        raise UserError("--allocators belongs to `try allocator`")
    store = open_store(args)
    if args.experiment == "allocator":
        sides, extra = allocator_sides(args, cmd)
    else:
        sides, extra = build_sides(args, cmd, store)
    series = measure(sides, args.runs, args.warmup, args.metric, progress_printer())
    if sys.stderr.isatty():
        print(file=sys.stderr)
    refused = extra.pop("refused")
    doc = {**result.try_json(series, args.metric), **extra}
    doc["variants"] += [
        {"name": name, "ratio": None, "ci95": None, "verdict": "failed", "error": why}
        for name, why in refused.items()
    ]
    raw = {**doc, "warmup": args.warmup, "raw": result.raw_runs(series)}
    doc["experiment"] = result.store_experiment(store, 0, f"try-{args.experiment}", raw)
    report_stored(store.root, doc["experiment"])
    emit(doc, args.format, args.output, render_try)
    return 1 if refused and args.experiment == "build" else 0
