"""perfsleuth try allocator|build|patch|combined -- CMD: experiments against a baseline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..experiments import allocator, build, combined, patch, result
from ..experiments.runner import Side, measure, shell_or_argv
from ..model.progress import Progress
from ..present import formats_for, write
from ..store.runs import Store
from .common import add_output_options, open_store, progress_display
from .compare import add_measure_options, check_measure_options, report_stored

NAME = "try"
HELP = (
    "try other allocators (LD_PRELOAD), build flags (O3, LTO, PGO...), a patch, or all of "
    "them combined on a workload"
)
DOCUMENT = "try"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    experiments = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    alloc_help = "the program as it is against mimalloc, jemalloc, tcmalloc (LD_PRELOAD)"
    alloc = experiments.add_parser("allocator", help=alloc_help, description=alloc_help)
    alloc.add_argument(
        "--allocators",
        metavar="LIST",
        help="comma-separated subset of mimalloc,jemalloc,tcmalloc (default: all)",
    )
    rebuild_help = (
        "rebuild with other compiler flags and compare the builds; the build command gets "
        "OUT (its output folder), CFLAGS, CXXFLAGS and LDFLAGS; {out} in the workload is "
        "replaced by OUT"
    )
    rebuild = experiments.add_parser("build", help=rebuild_help, description=rebuild_help)
    rebuild.add_argument(
        "--build",
        metavar="SHELL_CMD",
        required=True,
        help="builds the program into $OUT using $CFLAGS/$CXXFLAGS/$LDFLAGS",
    )
    rebuild.add_argument(
        "--dependency",
        metavar="SONAME",
        help="the build command builds this shared library (e.g. libz3.so.4) instead of the "
        "program: the baseline is the program as it is, each variant runs it with its build "
        "of the library first on LD_LIBRARY_PATH",
    )
    rebuild.add_argument(
        "--variants",
        metavar="LIST",
        help=f"comma-separated, from {','.join(build.VARIANTS)} "
        f"(default: {','.join(build.DEFAULT_VARIANTS)})",
    )
    patch_help = (
        "apply a patch to a copy of the source folder, build the copy as it is and the "
        "patched one with the build command (same contract as try build), compare them"
    )
    patched = experiments.add_parser("patch", help=patch_help, description=patch_help)
    patched.add_argument("patch", metavar="FILE.diff", help="the change (git diff or diff -u)")
    add_source_and_build(
        patched,
        "builds the program into $OUT, run in each copy of the source folder",
        "the source folder the patch applies to (default: the current folder)",
    )
    combined_help = (
        "every fix at once, cumulatively: the baseline, + an allocator, + a patch, + a "
        "build variant, + a library rebuilt from its source; each side against the baseline "
        "and each step against the one before, in the same interleaved rounds (build "
        "contract as try build)"
    )
    together = experiments.add_parser("combined", help=combined_help, description=combined_help)
    add_source_and_build(
        together,
        "builds the program into $OUT, run in the source folder (or its patched copy)",
        "the source folder the build runs in and the patch applies to (default: .)",
    )
    together.add_argument(
        "--allocator", metavar="NAME", help="first step: mimalloc, jemalloc or tcmalloc"
    )
    together.add_argument("--patch", metavar="FILE.diff", help="second step: a code change")
    together.add_argument(
        "--variant",
        metavar="NAME",
        help=f"the step after the allocator and patch (each if given): the (patched) source "
        f"rebuilt as one of {','.join(build.VARIANTS)}",
    )
    together.add_argument(
        "--dependency",
        metavar="SONAME",
        help="last step: this shared library (e.g. libz3.so.4), built by --dependency-build "
        "with --dependency-variant's flags, loaded by the program of the step before",
    )
    together.add_argument(
        "--dependency-build",
        metavar="SHELL_CMD",
        help="builds the library into $OUT using $CFLAGS/$CXXFLAGS/$LDFLAGS, run in the "
        "current folder",
    )
    together.add_argument(
        "--dependency-variant",
        metavar="NAME",
        help="the library's build variant, with --dependency only (default: pgo-lto)",
    )
    for sub in (alloc, rebuild, patched, together):
        add_measure_options(sub)
        add_output_options(sub, formats_for(DOCUMENT))
        # The parent parser has --store too; SUPPRESS keeps its value unless given here.
        sub.add_argument(
            "--store", metavar="PATH", default=argparse.SUPPRESS, help="the run store folder"
        )
    alloc.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS... (the workload)")
    for sub in (rebuild, patched, together):
        sub.add_argument(
            "cmd", nargs=argparse.REMAINDER, help="-- {out}/PROGRAM ARGS... (the workload)"
        )


def add_source_and_build(
    parser: argparse.ArgumentParser, build_help: str, source_help: str
) -> None:
    parser.add_argument("--build", metavar="SHELL_CMD", required=True, help=build_help)
    parser.add_argument("--source", metavar="DIR", default=".", help=source_help)


def workload(args: argparse.Namespace) -> list[str]:
    words = list(args.cmd)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise UserError(f"no command given; usage: perfsleuth try {args.experiment} -- CMD ARGS...")
    return shell_or_argv(words)


def allocator_sides(
    args: argparse.Namespace, cmd: list[str], _store: Store, _progress: Progress
) -> tuple[list[Side], dict[str, Any]]:
    names = args.allocators.split(",") if args.allocators else None
    p = allocator.plan(cmd, names)
    extra: dict[str, Any] = {"preload_checks": p.preload_checks, "refused": p.refused, "notes": []}
    if p.missing:
        install = allocator.install_command(p.missing)
        missing = [a.name for a in p.missing]
        extra["missing"] = {"allocators": missing, "install": install}
        extra["notes"].append(f"not installed: {', '.join(missing)}; install with `{install}`")
    if len(p.sides) == 1:
        why = [f"{name}: {reason}" for name, reason in p.refused.items()] + extra["notes"]
        raise UserError("no allocator to try: " + "; ".join(why))
    return p.sides, extra


def build_sides(
    args: argparse.Namespace, cmd: list[str], store: Store, progress: Progress
) -> tuple[list[Side], dict[str, Any]]:
    variants = build.parse_variants(args.variants)
    dependency = args.dependency or ""
    p = build.plan(
        args.build, variants, cmd, store.root / "builds", progress=progress, dependency=dependency
    )
    extra = {"build": args.build, "refused": p.refused, "notes": p.notes}
    return p.sides, {**extra, "dependency": dependency} if dependency else extra


def patch_sides(
    args: argparse.Namespace, cmd: list[str], store: Store, progress: Progress
) -> tuple[list[Side], dict[str, Any]]:
    p = patch.plan(Path(args.patch), request(args, cmd, store, progress))
    return p.sides, {"patch": args.patch, "build": args.build, "refused": {}, "notes": p.notes}


def combined_sides(
    args: argparse.Namespace, cmd: list[str], store: Store, progress: Progress
) -> tuple[list[Side], dict[str, Any]]:
    fixes = combined.Fixes(
        args.allocator or "",
        Path(args.patch) if args.patch else None,
        one_variant(args.variant, "--variant") if args.variant else None,
        dependency(args),
    )
    p = combined.plan(fixes, request(args, cmd, store, progress))
    extra = {"build": args.build, "refused": {}, "notes": p.notes}
    return p.sides, {**extra, "dependency": args.dependency} if args.dependency else extra


def dependency(args: argparse.Namespace) -> combined.Dependency | None:
    if bool(args.dependency) != bool(args.dependency_build):
        raise UserError(
            "try combined's library step needs both --dependency SONAME and "
            "--dependency-build SHELL_CMD"
        )
    if args.dependency_variant and not args.dependency:
        raise UserError("try combined's --dependency-variant needs --dependency SONAME")
    if not args.dependency:
        return None
    variant = one_variant(args.dependency_variant or "pgo-lto", "--dependency-variant")
    return combined.Dependency(args.dependency, args.dependency_build, variant)


def one_variant(text: str, option: str) -> build.Variant:
    variants = build.parse_variants(text)
    if len(variants) != 1:
        raise UserError(f"try combined takes one {option}, e.g. pgo-lto")
    return variants[0]


def request(
    args: argparse.Namespace, cmd: list[str], store: Store, progress: Progress
) -> build.Request:
    return build.Request(args.build, cmd, Path(args.source), store.root / "builds", progress)


SIDES = {
    "allocator": allocator_sides,
    "build": build_sides,
    "patch": patch_sides,
    "combined": combined_sides,
}


def run(args: argparse.Namespace) -> int:
    check_measure_options(args)
    cmd = workload(args)
    store = open_store(args)
    with progress_display(args) as progress:
        sides, extra = SIDES[args.experiment](args, cmd, store, progress)
        series = measure(sides, args.runs, args.warmup, args.metric, progress)
    refused = extra.pop("refused")
    extra["notes"] = args.metric_notes + extra["notes"]
    doc = {**result.try_json(series, args.metric), **extra}
    if args.experiment == "combined":
        doc["steps"] = result.steps_json(series, args.metric)
    doc["variants"] += [
        {"name": name, "ratio": None, "ci95": None, "verdict": "failed", "error": why}
        for name, why in refused.items()
    ]
    raw = {**doc, "warmup": args.warmup, "raw": result.raw_runs(series)}
    doc["experiment"] = result.store_experiment(store, 0, f"try-{args.experiment}", raw)
    report_stored(store.root, doc["experiment"])
    write(DOCUMENT, doc, args.format, args.output)
    return 1 if refused and args.experiment == "build" else 0
