"""A count run's line counts (model/line_counts.py: all `diff` of two count runs reads of
a run) and its listing's counts (model/count_listing.py: all `annotate` reads) kept in
answers/ in marshal's form, so that `diff` and `annotate` read them through the run index
(run_index.py) without importing DuckDB, whose import cost more CPU than cg_diff's whole
diff of speedtest1 and cg_annotate's whole run on a small program (docs/counts.md), nor
reading the whole counts document.

marshal, not JSON: of the same lists, dicts, strings and numbers it reads bc's line counts
in a third of json.loads's time and imports nothing (the json package imports re, with
the enum and functools it needs: a count view's other modules do without them). A file
only this code reads: the name of every file in answers/ carries the code's stamp, and
marshal's format of these types is the same in every Python 3.

Kept when `record` stores the run, or else the first time `diff` or `annotate` loads it
from DuckDB; a stored run never changes, and the file's name carries the code's stamp
like every file there.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable

from ..model.line_counts import LineCounts
from . import run_index
from .answers import AnswerFiles

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any

    from ..model.count_listing import CountListing
    from ..model.counts import Counts
    from ..model.run import Recording, RunInfo
    from .runs import Store

COUNTS_FILE = "line-counts"
LISTING_FILE = "count-listing"


def keep(store: Store, info: RunInfo, counts: Counts) -> LineCounts:
    """Keep a count run's line counts in answers/, and return them."""
    lines = LineCounts.of(counts)
    AnswerFiles(store.root).keep(info, COUNTS_FILE, marshal.dumps(lines.to_json()))
    return lines


def keep_listing(store: Store, info: RunInfo, listing: CountListing) -> None:
    """Keep what `annotate` reads of a count run in answers/."""
    AnswerFiles(store.root).keep(info, LISTING_FILE, marshal.dumps(listing.to_kept()))


def keep_recorded(
    store: Store,
    info: RunInfo,
    recording: Recording,
    listing: Callable[[RunInfo, Counts], CountListing],
) -> None:
    """Keep the line counts and the listing (made by `listing`) of a run just stored, if
    it has counts: the first `diff` or `annotate` of a count run just recorded does not
    import DuckDB either."""
    from ..model.counts import Counts

    stored = (d.data for d in recording.documents if (d.kind, d.name) == (Counts.KIND, Counts.NAME))
    counts = next((c for c in stored if isinstance(c, Counts)), None)
    if counts is not None:
        keep(store, info, counts)
        keep_listing(store, info, listing(info, counts))


def load(root: str | PathLike[str], *refs: str | None) -> list[tuple[int, LineCounts]] | None:
    """The id and line counts of each count run `refs` name in the store at `root`, read
    from their kept files; None when the index is stale or a run's are not kept (load
    the runs from DuckDB)."""
    loaded = []
    for ref in refs:
        kept = _kept(root, ref, COUNTS_FILE)
        if kept is None:
            return None
        loaded.append((kept[0], LineCounts.from_json(kept[1])))
    return loaded


def load_listing(root: str | PathLike[str], ref: str | None) -> tuple[int, CountListing] | None:
    """The id and listing's counts of the count run `ref` names, read from its kept file;
    None when the index is stale or the run has none kept (a sampled run, or a count run
    not read since it was stored by an older perfsleuth: load it from DuckDB)."""
    from ..model.count_listing import CountListing

    kept = _kept(root, ref, LISTING_FILE)
    return None if kept is None else (kept[0], CountListing.from_kept(kept[1]))


def _kept(root: str | PathLike[str], ref: str | None, name: str) -> tuple[int, Any] | None:
    """The id of the run `ref` names and the value of its kept file `name`, through the run
    index (None for a file that does not load: it is removed, and kept again)."""
    run = run_index.find(root, ref)
    kept = None if run is None else AnswerFiles(root).kept_value(*run.key, name, _loaded)
    return None if run is None or kept is None else (run.id, kept)


def _loaded(data: bytes) -> Any:
    """The value marshal kept in `data`; ValueError for a file cut short or damaged."""
    try:
        value = marshal.loads(data)
    except (EOFError, TypeError) as e:
        raise ValueError(str(e)) from e
    if not isinstance(value, dict):
        raise ValueError("not a kept document")
    return value
