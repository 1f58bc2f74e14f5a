"""Options and steps shared by several subcommands."""

from __future__ import annotations

from ..errors import UserError
from ..model.states import STATES
from ..present import TitledProfile, describe
from ..store import layout

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    import argparse
    from contextlib import AbstractContextManager
    from os import PathLike
    from pathlib import Path

    from ..model.count_listing import CountListing
    from ..model.counts import Counts, ExactCounts
    from ..model.profile import Profile
    from ..model.progress import Progress
    from ..model.run import LoadedRun, RunInfo
    from ..store.runs import Store


def add_output_options(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """--format (one of `formats`, the first by default) and -o FILE."""
    parser.add_argument(
        "--format",
        choices=formats,
        default=formats[0],
        help=f"{describe(formats)} (default: %(default)s)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def add_run_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run", nargs="?", default="latest", help="run id, latest (default) or latest~N"
    )


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state", action="append", choices=STATES, help="only samples in this thread state"
    )
    parser.add_argument(
        "--thread", action="append", type=int, metavar="TID", help="only samples of this thread"
    )
    parser.add_argument(
        "--no-inline",
        action="store_true",
        help="fold inlined functions into their caller, as `perf report` does",
    )


def add_recursion_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--split-recursion",
        action="store_true",
        help="count runs: show each recursion level (f'2, f'3) apart instead of in its function",
    )


def open_store(args: argparse.Namespace) -> Store:
    # Imported here: a command answered from the files kept beside the database (the
    # run index, answers/) does without DuckDB's store and the model it reads.
    from ..store.runs import Store

    return Store(args.store)


def without_cycle_collection() -> None:
    """A count view reads a run's kept counts and writes one listing, then ends: what it
    makes is freed by reference counting, and the cyclic collector's passes over the
    loaded lists were 5% of `diff`'s instructions (bc: 181.3 M with them, 172.1 M without;
    tcc 363.7 M, 347.5 M: docs/counts.md)."""
    import gc

    gc.disable()


def store_folder(args: argparse.Namespace) -> str | PathLike[str]:
    """The store's folder, for reading the files kept beside its database (without
    pathlib: `top` and `diff` read only those)."""
    return layout.store_folder(args.store)


def load_profile(args: argparse.Namespace, ref: str | None = None) -> tuple[Store, int, Profile]:
    store = open_store(args)
    run_id = store.resolve(ref if ref is not None else args.run)
    profile = apply_filters(store.load(run_id), args)
    return store, run_id, profile


def load_run(args: argparse.Namespace, ref: str | None = None) -> LoadedRun:
    return open_store(args).load_ref(ref if ref is not None else args.run)


def load_runs(args: argparse.Namespace, *refs: str) -> list[LoadedRun]:
    return open_store(args).load_refs(*refs)


def exact_counts(args: argparse.Namespace, run: LoadedRun) -> ExactCounts | None:
    """A count run's exact counts as the views read them, or None for a sampled run or
    when a sample filter (--state, --thread, --no-inline) asks for the profile."""
    if has_filters(args):
        return None
    return run.exact(split_recursion=getattr(args, "split_recursion", False))


def has_filters(args: argparse.Namespace) -> bool:
    """Whether a sample filter (--state, --thread, --no-inline) was given."""
    return any(getattr(args, name, None) for name in ("state", "thread", "no_inline"))


def require_exact(args: argparse.Namespace, run: LoadedRun) -> ExactCounts:
    """The exact counts of a count run, or a clear error for any other run."""
    exact = run.exact(split_recursion=getattr(args, "split_recursion", False))
    if exact is None:
        raise UserError(
            f"run {run.id} has no exact counts; record one with "
            "`perfsleuth record --mode count -- CMD`"
        )
    return exact


def titled_profile(store: Store, run_id: int, profile: Profile) -> TitledProfile:
    """A run's profile for export, titled with its id and command."""
    return TitledProfile(profile, f"run {run_id}: {store.run_info(run_id).command}")


def apply_filters(profile: Profile, args: argparse.Namespace) -> Profile:
    missing = sorted(set(getattr(args, "thread", None) or ()) - {t.tid for t in profile.threads})
    if missing:
        # else the view is empty, as if the thread had done nothing
        raise UserError(
            f"the run has no thread {', '.join(map(str, missing))}; "
            "`perfsleuth threads RUN` lists its threads"
        )
    if getattr(args, "state", None) or getattr(args, "thread", None):
        profile = profile.filtered(states=args.state, tids=args.thread)
    if getattr(args, "no_inline", False):
        profile = profile.without_inlines()
    return profile


def source_roots(args: argparse.Namespace, info: RunInfo) -> list[Path]:
    """The source roots of a run (views/source.source_roots) with the --src given."""
    from pathlib import Path

    from ..views import source  # what reads sources is loaded only by the commands that do

    return source.source_roots([Path(p) for p in getattr(args, "src", None) or []], info)


def count_listing(info: RunInfo, counts: Counts) -> CountListing:
    """What `annotate` reads of a count run (kept in answers/ by store/kept_counts.py)."""
    from ..collect.run_facts import is_own_command, working_root
    from ..model.count_listing import CountListing

    root = working_root(info)
    own = is_own_command(info)
    return CountListing.of(counts, info.started, own, None if root is None else str(root))


def progress_display(args: argparse.Namespace) -> AbstractContextManager[Progress]:
    """The progress display of a long command: on a terminal's stderr, unless --quiet."""
    from ..present.progress import display  # rich: only commands that show progress

    return display(quiet=getattr(args, "quiet", False))


def keep_ui_answers(
    store: Store, info: RunInfo, progress: Progress, profile: Profile, *, only_top: bool = False
) -> None:
    """The run's flame graph, TopN, facts and time order kept for the web UI; with
    `only_top` its TopN alone (`import`: views/run_answers.IMPORT_PAGES)."""
    # Imported here: only commands that store a run need the views and their readers.
    from ..views import run_answers

    progress.phase("keeping the web UI's pages of the run")
    pages = run_answers.IMPORT_PAGES if only_top else run_answers.PAGES
    run_answers.keep(store, info, profile, pages)


def amount(profile: Profile) -> str:
    """What a stored run holds, as `record` and `import` say it: exact counts in their
    unit (count and cache modes), else samples."""
    from ..model.profile import EXACT_UNITS  # loaded already: `profile` is one

    if profile.unit in EXACT_UNITS:
        return f"{profile.total:,.0f} {profile.unit}"
    return f"{profile.num_samples:,} samples"


def tools_differ(run_a: object, tool_a: str, run_b: object, tool_b: str) -> str:
    """Why two runs counted by valgrind's two tools differ beyond the program: a recorded
    cJSON run against a cachegrind file of the same command differed by 991,558
    instructions in 90 functions (cachegrind's unnamed code, the C library's helpers)."""
    return (
        f"run {run_a} was counted by {tool_a} and run {run_b} by {tool_b}, which count and "
        "name some instructions differently (cJSON's same command: +0.31% in 90 functions); "
        "compare runs counted by one tool"
    )
