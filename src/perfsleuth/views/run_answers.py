"""A run's whole-run answers, the ones the web UI asks for first (facts, flame graph,
TopN by function, time order), as the bytes the API sends them.

`serve` keeps them in the store's answers/ folder (store/answers.py) the first time a
page asks; `record` keeps them as soon as the run is stored (`keep`), so the first
`serve` to show the run reads files (~1 s for 100k stacks) instead of loading and
folding the run (~2.2 s quiet, 4-7 s under load). `import` keeps only the TopN
(`IMPORT_PAGES`): `perfsleuth top` reads it next, and keeping the other pages was a
sixth of `import`'s CPU on a 800k-sample perf.data; the first `serve` keeps them.
Both compute them here, so the bytes are the same whichever kept them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial

from ..model.profile import Profile
from ..model.run import RunInfo
from ..model.timeline import Timeline
from ..store.answers import AnswerFiles
from ..store.runs import Store
from . import flame, timeline, top
from .keys import top_name

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:  # a count run's; a sampled run's pages are kept without the module
    from typing import Any

    from ..model.counts import ExactCounts

FACTS = "facts"
FLAME = "flame"
TIME_ORDER = "timeline"


class NoSuchPage(Exception):
    """The run has no such page (a time order of a run that took no timed samples)."""


@dataclass(frozen=True)
class RunSource:
    """What a run's whole-run pages are built from, each read when a page first needs it."""

    info: RunInfo
    profile: Callable[[], Profile]
    columns: Callable[[], flame.FlameColumns]
    exact: Callable[[], ExactCounts | None]  # a count run's exact counts
    kept_timeline: Callable[[], Timeline | None]


@dataclass(frozen=True)
class Page:
    """One whole-run page: the answer the web UI asks for first."""

    name: str  # its file in the store's answers/ folder
    route: str  # its API path after /api/runs/RUN
    build: Callable[[RunSource], bytes]  # raises NoSuchPage for a run without it


def encode_json(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, default=str).encode()


def facts(profile: Profile) -> bytes:
    """The run's threads and states: the flame page needs no profile for them."""
    threads = [{"tid": t.tid, "pid": t.pid, "name": t.name} for t in profile.threads]
    states = sorted({s for s in profile.sample_state if s})
    return json.dumps({"threads": threads, "states": states}).encode()


def top_answer(run_id: int, profile: Profile, by: str, exact: ExactCounts | None = None) -> bytes:
    """The TopN of the whole run: a count run's from its exact counts, as `perfsleuth top`."""
    found = top.exact_top(exact, by=by, n=0) if exact is not None else top.top(profile, by=by, n=0)
    return encode_json({"run": str(run_id), **found})


def exact_counts(store: Store, info: RunInfo) -> ExactCounts | None:
    """A count run's exact counts (its TopN is read from them, as the CLI's is); None
    for other runs, without reading the store."""
    return store.load_run(info.id).exact() if info.unit == "instructions" else None


def time_order(source: RunSource) -> bytes:
    kept = source.kept_timeline()
    if kept is None:
        raise NoSuchPage(timeline.missing(source.info))
    return timeline.encode(source.profile(), source.columns(), kept, set())


PAGES = (
    Page(FACTS, "", lambda s: facts(s.profile())),
    Page(FLAME, "/flame", lambda s: flame.encode(s.columns())),
    Page(
        top_name("function"),
        "/top",
        lambda s: top_answer(s.info.id, s.profile(), "function", s.exact()),
    ),
    Page(TIME_ORDER, "/timeline", time_order),
)
PAGE = {page.name: page for page in PAGES}
IMPORT_PAGES = (PAGE[top_name("function")],)


def stored_run(store: Store, info: RunInfo, profile: Callable[[], Profile]) -> RunSource:
    """The source of a stored run's pages, its profile as `profile` gives it."""
    return RunSource(
        info,
        profile,
        cache(lambda: flame.flame_columns(profile(), processes=True)),
        lambda: exact_counts(store, info),
        lambda: profile().timeline,
    )


def kept_page(store: Store, source: RunSource, name: str) -> bytes:
    """Whole-run page NAME of a run, read from the store's answers/ or built and kept."""
    return AnswerFiles(store.root).get(source.info, name, partial(PAGE[name].build, source))


def keep(
    store: Store, info: RunInfo, profile: Profile | None = None, pages: tuple[Page, ...] = PAGES
) -> None:
    """Compute and keep a just-stored run's whole-run pages; `info` is the run as
    Store.add_run stored it (reading it back opened DuckDB again), `profile` the one
    just stored, when the caller has it (reading a large run back costs more than the
    pages)."""
    stored = profile if profile is not None else store.load(info.id)
    source = stored_run(store, info, lambda: stored)
    for page in pages:
        try:
            kept_page(store, source, page.name)
        except NoSuchPage:
            continue
