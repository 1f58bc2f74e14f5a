"""perfsleuth gate: fail CI when a reference workload executes more instructions.

`gate --baseline RUN_OR_FILE -- CMD` records a count run of CMD, compares its
exact total with the baseline's and exits 1 past --max-increase (0 otherwise,
2 for bad input). `gate --export RUN -o FILE` writes the small baseline file to
commit next to the code. A baseline names the binary it came from (file name and
build-id): a baseline of another program is refused; a different build of the
same program is what CI compares, so that is only noted (--same-build refuses it).
A build under another file name (speedtest1-old against speedtest1) is the same
program when it defines the functions that hold most of the baseline's instructions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..present import formats_for, write
from ..store.run_index import is_run_reference
from ..views.count_diff import inlining_changes, paired_files, unnamed_paired
from .common import add_output_options, open_store, require_exact, tools_differ

# Recording (valgrind, the symbolizer, record's store) is imported by current_run when
# it records: `gate --help` paid 0.31 CPU-s for it (issue 29: any command under 0.3).
TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from ..model.line_counts import LineCounts
    from ..store.runs import Store

NAME = "gate"
HELP = "CI gate: fail when a workload's exact instruction count grows past a threshold"

BASELINE_VERSION = 1
MAX_FUNCTIONS = 200  # kept in a baseline file, by count
EVENT = "Ir"
# A differently named binary is the baseline's program when it defines the functions
# holding at least this share of the baseline's listed instructions (the rest is in
# shared libraries, or in functions the change renamed or removed), not counting the
# functions every program defines
SAME_PROGRAM_SHARE = 0.5
EVERY_PROGRAMS = frozenset({"main", "_start", "_init", "_fini"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="RUN_OR_FILE", help="a count run or baseline file")
    parser.add_argument(
        "--max-increase",
        default="0.5%",
        metavar="PCT",
        help="largest allowed growth of the total, in percent (default 0.5%%)",
    )
    parser.add_argument("--export", metavar="RUN", help="write RUN's baseline file (to -o FILE)")
    parser.add_argument(
        "--run",
        metavar="RUN",
        help="compare this stored count run with the baseline instead of recording CMD",
    )
    parser.add_argument(
        "--same-build", action="store_true", help="refuse a baseline from another build"
    )
    parser.add_argument("-n", type=int, default=10, help="changes to show (default 10)")
    parser.add_argument("--only", metavar="FUNC", help="count only inside FUNC (as in record)")
    parser.add_argument("--keep-env", action="store_true", help="pass your environment through")
    add_output_options(parser, formats_for("gate"))
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")


def run(args: argparse.Namespace) -> int:
    if args.export:
        return export(args)
    if not args.baseline:
        raise UserError("give --baseline RUN_OR_FILE (or --export RUN -o FILE to make one)")
    limit = parse_percent(args.max_increase)
    baseline = load_baseline(open_store(args), args.baseline)
    store, run_id, current = current_run(args, baseline)
    tools = baseline.get("counted_by", "callgrind"), current["counted_by"]
    if tools[0] != tools[1]:
        print(
            f"perfsleuth: note: {tools_differ(baseline['run'], tools[0], run_id, tools[1])}",
            file=sys.stderr,
        )
    info = store.run_info(run_id)
    doc = compare(baseline, current, limit, args.n)
    if not Path(args.baseline).is_file():
        doc["inlining"] = inlined_between(*kept_lines(store, int(baseline["run"]), run_id))
    doc["run"] = str(run_id)
    doc["exit_status"] = info.exit_status
    doc["passed"] = doc["passed"] and not info.exit_status
    write("gate", doc, args.format, args.output)
    return 0 if doc["passed"] else 1


def current_run(
    args: argparse.Namespace, baseline: dict[str, Any]
) -> tuple[Store, int, dict[str, Any]]:
    """The run to judge, the stored one --run names or a new count run of CMD, and its
    baseline document."""
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else list(args.cmd)
    if args.run:
        if cmd:
            raise UserError("give either --run RUN or -- CMD ARGS..., not both")
        store = open_store(args)
        run_id = store.resolve(args.run)
        current = baseline_of(store, run_id)
        check_binary(
            baseline,
            current["executable"],
            current["build_id"],
            args.same_build,
            lambda name: name in current["functions"],
        )
        return store, run_id, current
    if not cmd:
        raise UserError(
            "no command given; usage: perfsleuth gate --baseline B -- CMD ARGS... "
            "(or --run RUN to judge a stored count run)"
        )
    from ..collect import valgrind
    from ..collect.options import RecordOptions
    from ..symbols.symbolizer import elf_symbols
    from .record import store_recording

    executable = valgrind.resolve_program(cmd)
    symbols = elf_symbols(executable)
    check_binary(
        baseline,
        executable,
        valgrind.build_id(executable),
        args.same_build,
        lambda name: symbols.address_of(name) is not None,
    )
    check_settings(baseline, args)
    options = RecordOptions(mode="count", only=args.only, keep_env=args.keep_env)
    store, info, _profile = store_recording(open_store(args), options, cmd)
    return store, info.id, baseline_of(store, info.id)


def kept_lines(store: Store, *run_ids: int) -> list[LineCounts]:
    """The line counts of the count runs (store/kept_counts.py), kept now if not yet."""
    from ..store import kept_counts

    kept = kept_counts.load(store.root, *map(str, run_ids))
    if kept is not None:
        return [lines for _id, lines in kept]
    loaded = [store.load_run(run_id) for run_id in run_ids]
    return [kept_counts.keep(store, run.info, run.counts) for run in loaded if run.counts]


def inlined_between(baseline: LineCounts, current: LineCounts) -> list[dict]:
    """The functions one run calls and the other inlined, as `diff` names them
    (views.count_diff.inlining_changes): read from the lines, which a stored run
    baseline has and a baseline file does not (it keeps functions). The gate listed
    mujs's stackidx, made noinline, as `<= 374 -> 74,100,646` alone."""
    event = EVENT if EVENT in baseline.events and EVENT in current.events else ""
    files = paired_files(baseline.files.keys(), current.files.keys())
    return inlining_changes(baseline, current, event or baseline.events[0], files)


def export(args: argparse.Namespace) -> int:
    store = open_store(args)
    doc = baseline_of(store, store.resolve(args.export), MAX_FUNCTIONS)
    write("gate", doc, "json", args.output)
    if args.output:
        print(
            f"perfsleuth: wrote the baseline of run {args.export} to {args.output}", file=sys.stderr
        )
    return 0


def parse_percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        value = -1.0
    if value < 0:
        raise UserError(f"--max-increase {text!r}: give a percentage such as 0.5% or 2")
    return value / 100.0


def baseline_of(store: Store, run_id: int, limit: int | None = None) -> dict[str, Any]:
    """The baseline document of a count run: its `limit` largest functions (a file's),
    or all of them (`complete`: a function it lacks ran no instruction)."""
    loaded = store.load_run(run_id)
    info = loaded.info
    exact = require_exact(argparse.Namespace(), loaded)
    functions = exact.function_self(EVENT, merge_unnamed=True)
    kept = dict(sorted(functions.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])
    return {
        "perfsleuth_baseline": BASELINE_VERSION,
        "run": str(run_id),
        "command": info.command,
        "executable": Path(info.meta.get("executable", "")).name,
        "build_id": info.meta.get("build_id", ""),
        "only": info.meta.get("only"),
        "fixed_env": info.meta.get("fixed_env", True),
        "counted_by": info.meta.get("recorder", "callgrind"),
        "event": EVENT,
        "total": exact.total(EVENT),
        "functions": kept,
        **({"complete": True} if limit is None else {}),
    }


def load_baseline(store: Store, ref: str) -> dict[str, Any]:
    path = Path(ref)
    if not path.is_file():
        if not is_run_reference(ref):
            raise UserError(f"--baseline {ref}: no such file, and not a run id")
        return baseline_of(store, store.resolve(ref))
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        from ..formats import callgrind  # only to say what the file is

        if callgrind.sniff(path.read_bytes()[:4096]):
            raise UserError(
                f"{ref}: a callgrind/cachegrind file, not a baseline file; import it "
                f"(perfsleuth import {ref}) and pass its run id to --baseline"
            ) from e
        raise UserError(f"{ref}: not a baseline file ({e}); make one with gate --export") from e
    if not isinstance(doc, dict) or doc.get("perfsleuth_baseline") != BASELINE_VERSION:
        raise UserError(f"{ref}: not a perfsleuth baseline file; make one with gate --export")
    return doc


def program_unnamed(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, int]:
    """The baseline's functions, its program's code without a symbol (PLT stubs) named as
    the program judged names its own, when the two file names differ. unnamed_paired pairs
    them only when each side has one such name the other lacks, which a file cut to its
    largest functions seldom allows (bzip2-reg against bzip2's file: `30 -> 0  [unnamed
    code in bzip2]`, as the loader's unnamed code was below the file's list)."""
    functions = baseline["functions"]
    old, new = (f"[unnamed code in {doc.get('executable')}]" for doc in (baseline, current))
    if old == new or old not in functions or new in functions:
        return functions
    return {new if name == old else name: count for name, count in functions.items()}


def listed_floor(baseline: dict[str, Any]) -> int | None:
    """The smallest count a baseline file lists, the most a function it leaves out had;
    None when it lists every function that ran."""
    functions = baseline["functions"]
    if baseline.get("complete") or len(functions) < MAX_FUNCTIONS:
        return None
    return min(functions.values())


def check_binary(
    baseline: dict[str, Any],
    executable: str,
    build_id: str,
    same_build: bool,
    defines: Callable[[str], bool],
) -> None:
    """Refuse another program's baseline; note (or refuse) another build's."""
    name = Path(executable).name
    if baseline["executable"] and name and baseline["executable"] != name:
        check_renamed(baseline, name, build_id, defines)
    if baseline["build_id"] != build_id:
        message = (
            f"the baseline's {baseline['executable'] or name} has build-id "
            f"{baseline['build_id'] or 'none'}, this one {build_id or 'none'}"
        )
        if not (baseline["build_id"] and build_id):
            unknown = "the baseline's" if not baseline["build_id"] else "this run's"
            message = (
                f"{unknown} build-id is not known (a run imported from valgrind's file names "
                f"none), so whether both are one build of {name or 'the program'} is not known"
            )
        if same_build:
            refuses = "a different build" if baseline["build_id"] and build_id else "an unknown one"
            raise UserError(f"{message}; --same-build refuses {refuses}")
        ending = ": comparing two builds" if baseline["build_id"] and build_id else ""
        print(f"perfsleuth: note: {message}{ending}", file=sys.stderr)


def check_renamed(
    baseline: dict[str, Any], name: str, build_id: str, defines: Callable[[str], bool]
) -> None:
    """Accept a build under another file name when it holds the baseline's functions."""
    functions = {f: n for f, n in baseline["functions"].items() if f not in EVERY_PROGRAMS}
    listed = sum(functions.values())
    share = sum(n for f, n in functions.items() if defines(f)) / listed if listed else 0.0
    found = (
        f"{name} defines the functions holding {share:.0%} of the baseline's instructions "
        "outside main"
    )
    if share < SAME_PROGRAM_SHARE:
        raise UserError(
            f"the baseline was recorded from {baseline['executable']} (build-id "
            f"{baseline['build_id'] or 'none'}), not {name} (build-id {build_id or 'none'}), "
            f"and {found}: another program; export a baseline of this program"
        )
    print(
        f"perfsleuth: note: the baseline was recorded from {baseline['executable']}; {found}, "
        "so it is taken as another build of the same program",
        file=sys.stderr,
    )


def check_settings(baseline: dict[str, Any], args: argparse.Namespace) -> None:
    """Counts taken with another --only or environment are not comparable: say so."""
    if baseline.get("only") != args.only:
        print(
            f"perfsleuth: note: the baseline was counted with --only {baseline.get('only')}, "
            f"this run with --only {args.only}",
            file=sys.stderr,
        )
    if baseline.get("fixed_env", True) == args.keep_env:
        print(
            "perfsleuth: note: the baseline and this run differ in --keep-env; "
            "environment differences move counts",
            file=sys.stderr,
        )


def compare(baseline: dict, current: dict, limit: float, n: int) -> dict[str, Any]:
    before, after = baseline["total"], current["total"]
    change = (after - before) / before if before else 0.0
    deltas = []
    known = unnamed_paired(program_unnamed(baseline, current), current["functions"])
    floor = listed_floor(baseline)
    for name in set(known) | set(current["functions"]):
        b = current["functions"].get(name, 0)
        if name in known or floor is None:
            a = known.get(name, 0)
            if a != b:
                deltas.append({"function": name, "a": a, "b": b, "delta": b - a})
        elif b > floor:
            # below the baseline file's list: its count then was at most the list's
            # smallest, so it grew by at least the rest (jq's jvp_refcnt_dec made noinline,
            # 10,426,612 of the change, was left out); one at most that may not have
            # changed (SQLite's exprAnalyze, unchanged, was listed as 0 -> 26,643)
            deltas.append(
                {"function": name, "a": None, "a_at_most": floor, "b": b, "delta": b - floor}
            )
    deltas.sort(key=lambda row: (-abs(row["delta"]), row["function"]))
    return {
        "baseline": baseline["run"],
        "event": baseline["event"],
        "total_baseline": before,
        "total": after,
        "change": change,
        "max_increase": limit,
        "passed": change <= limit,
        "same_build": bool(baseline["build_id"]) and baseline["build_id"] == current["build_id"],
        "changes": deltas[: n if n > 0 else None],
    }
