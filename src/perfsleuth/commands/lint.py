"""perfsleuth lint: the source and compiler analyses of hot loops, without a profile.

For editors and CI: aliasing writes (libclang patterns, checked against clang's
vectoriser remarks) and loops clang could not vectorise, ordered by confidence.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import UserError
from ..model.progress import SILENT
from ..present import FINDINGS, formats_for, write
from .common import add_output_options, progress_display

# The analyses (libclang, capstone, the experiments) are imported by the functions that
# run them: `lint --help` paid 0.44 CPU-s for them (issue 29: any command under 0.3).
TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import Any

    from ..model.findings import Finding
    from ..model.progress import Progress
    from ..static_analysis.unit_cache import UnitCache
    from ..static_analysis.unit_report import UnitReport

NAME = "lint"
HELP = "find aliasing writes and unvectorised loops in C/C++ sources (no profile needed)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="source files or folders (default: the files of --compile-commands, else .)",
    )
    parser.add_argument("--compile-commands", metavar="FILE", help="compile_commands.json")
    parser.add_argument(
        "--min-confidence",
        type=confidence,
        default=0.0,
        metavar="C",
        help="leave out findings below this confidence (0..1)",
    )
    parser.add_argument(
        "--missed",
        action="store_true",
        help="also report every loop clang did not vectorise (missed-vectorization)",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="prove each aliasing fix: rebuild a scratch copy with the change, with the unit's "
        "compiler, and compare its code (compile-only; `advise --verify --build` times it)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="analyse every unit again (default: reuse the reports of unchanged units)",
    )
    add_output_options(parser, formats_for(FINDINGS))


def confidence(text: str) -> float:
    """An argparse type: a number from 0 to 1, else one line saying so."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a confidence (a number from 0 to 1)")
    return value


def run(args: argparse.Namespace) -> int:
    from .. import rank
    from ..present.output import destination
    from ..static_analysis.unit_cache import UnitCache

    compile_commands = Path(args.compile_commands) if args.compile_commands else None
    if compile_commands is not None and not compile_commands.is_file():
        raise UserError(f"--compile-commands {args.compile_commands}: no such file")
    with progress_display(args) as progress:
        findings, notes = lint(
            [Path(p) for p in args.paths],
            compile_commands,
            min_confidence=args.min_confidence,
            missed=args.missed,
            progress=progress,
            cache=None if args.no_cache else UnitCache(),
        )
        if args.verify:
            notes += verify_compiled(findings, progress)
    doc = {
        "run": "lint",
        "findings": [rank.placed(f).to_json() for f in findings],
        "notes": notes,
        "src_roots": [str(Path(p).resolve()) for p in args.paths if Path(p).is_dir()],
    }
    if args.format == "text":
        with destination(args.output) as fh:
            fh.write(render_text(doc))
    else:
        write(FINDINGS, doc, args.format, args.output)
    return 0


def lint(
    paths: list[Path],
    compile_commands: Path | None,
    min_confidence: float = 0.0,
    missed: bool = False,
    progress: Progress = SILENT,
    cache: UnitCache | None = None,
) -> tuple[list[Finding], list[str]]:
    """Findings of every unit named (most confident first), and notes on units skipped.
    Without a profile to say which loops matter, the loops clang did not vectorise
    are many; they are reported only when `missed` is set. Units run in parallel, one
    per core; with a `cache`, an unchanged unit's report is read back instead."""
    from ..static_analysis.codebase import analyse_codebase
    from ..static_analysis.compile_db import flags_for, load_compile_commands
    from ..static_analysis.source import TranslationUnit, cindex, source_files
    from ..static_analysis.unit_analysis import skipped_notes

    cindex()  # a missing libclang is one clear error, before any work
    table = load_compile_commands(compile_commands) if compile_commands else None
    if not paths:
        paths = sorted(table) if table else [Path(".")]
    units = []
    for path in source_files(paths):
        flags = flags_for(path.resolve(), table)
        directory = Path(flags.directory) if flags.directory else None
        units.append(
            TranslationUnit(
                path.resolve(), list(flags.args), flags.origin, directory, compiler=flags.compiler
            )
        )
    progress.phase(f"analysing {len(units)} translation units", total=len(units))
    reports = analyse_codebase(units, missed, cache, progress.advance)
    findings: list[Finding] = []
    notes, skipped = [], []
    for report in reports:
        if report.error:
            skipped.append((report.unit.path.name, report.error))
            continue
        found, quiet = unit_findings(report, missed)
        findings.extend(found)
        notes.extend(quiet)
    notes += skipped_notes(skipped)
    kept = [f for f in findings if f.confidence >= min_confidence]
    kept.sort(key=lambda f: (-f.confidence, f.file, f.line))
    return kept, notes


def verify_compiled(findings: list[Finding], progress: Progress = SILENT) -> list[str]:
    """Each aliasing-write finding's compile-only proof (experiments/aliasing.py) in
    its `verified`; the notes of the changes that did not compile or apply."""
    from ..analyzers import Context
    from ..experiments.aliasing import verify_aliasing
    from ..model.profile import Profile
    from ..model.run import RunInfo

    ctx = Context(profile=Profile(), run=RunInfo(command="lint"))
    aliasing = [f for f in findings if f.kind == "aliasing-write"]
    progress.phase(f"verifying {len(aliasing)} aliasing fixes", total=len(aliasing))
    for finding in aliasing:
        proof = verify_aliasing(finding, ctx)
        if proof is not None:
            proof.pop("patched_files")
            finding.verified = {**proof, "timed": False}
        progress.advance()
    return ctx.notes


def unit_findings(report: UnitReport, missed: bool) -> tuple[list[Finding], list[str]]:
    """The unit's findings, and a note for each matched loop its compiler's own build
    shows to cost nothing (no reload, or no machine loop): not a finding."""
    from ..analyzers.aliasing_write import build_finding, no_cost_seen
    from ..analyzers.missed_vectorization import missed_loops

    aliasing, quiet = [], []
    for match, remark in report.confirmed_matches():
        asm = report.loop_code(match, None)
        if note := no_cost_seen(match, report, asm, asm_in_binary=False):
            quiet.append(note)
        else:
            aliasing.append(build_finding(match, report, remark, asm, 0.0, asm_in_binary=False))
    return aliasing + (missed_loops(report, None) if missed else []), quiet


def _shown_path(path: str) -> str:
    """The path relative to the current folder when it is under it, as compilers print."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def render_text(doc: dict[str, Any]) -> str:
    findings = doc["findings"]
    lines = [f"{len(findings)} finding(s), most confident first"]
    for f in findings:
        lines.append("")
        lines.append(f"{_shown_path(f['file'])}:{f['line']}: [{f['kind']}] {f['title']}")
        lines.append(f"    confidence {f['confidence']:.2f}, rule {f['rule']}")
        lines.extend(f"    - {item}" for item in f["evidence"])
        lines.append(f"    fix: {f['suggestion']}")
        if f.get("verified"):
            lines.append(f"    verified: {f['verified']['summary']}")
    lines.extend(f"note: {note}" for note in doc["notes"])
    return "\n".join(lines) + "\n"
