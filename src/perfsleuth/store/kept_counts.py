"""A count run's line counts (model/line_counts.py: all `diff` of two count runs reads of
a run) kept in answers/ as compact JSON, so that `diff` reads them through the run index
(run_index.py) without importing DuckDB, whose import cost more CPU than cg_diff's whole
diff of speedtest1 (docs/counts.md), nor reading the whole counts document.

Kept when `record` stores the run, or else the first time `diff` loads it from DuckDB;
a stored run never changes, and the file's name carries the code's stamp like every
file there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.line_counts import LineCounts
from . import run_index
from .answers import AnswerFiles

if TYPE_CHECKING:
    from ..model.counts import Counts
    from ..model.run import Recording, RunInfo
    from .runs import Store

COUNTS_FILE = "line-counts"


def keep(store: Store, info: RunInfo, counts: Counts) -> LineCounts:
    """Keep a count run's line counts in answers/, and return them."""
    lines = LineCounts.of(counts)
    text = json.dumps(lines.to_json(), separators=(",", ":"))
    AnswerFiles(store.root).keep(info, COUNTS_FILE, text.encode())
    return lines


def keep_recorded(store: Store, info: RunInfo, recording: Recording) -> None:
    """Keep the line counts of a run just stored, if it has counts: the first `diff`
    after two count runs were recorded then does not import DuckDB either."""
    from ..model.counts import Counts

    stored = (d.data for d in recording.documents if (d.kind, d.name) == (Counts.KIND, Counts.NAME))
    counts = next((c for c in stored if isinstance(c, Counts)), None)
    if counts is not None:
        keep(store, info, counts)


def load(root: Path, *refs: str | None) -> list[tuple[int, LineCounts]] | None:
    """The id and line counts of each count run `refs` name in the store at `root`, read
    from their kept files; None when the index is stale or a run's are not kept (load
    the runs from DuckDB)."""
    loaded = []
    for ref in refs:
        run = run_index.find(root, ref)
        kept = None if run is None else AnswerFiles(root).kept(*run.key, COUNTS_FILE)
        if run is None or kept is None:
            return None
        loaded.append((run.id, LineCounts.from_json(json.loads(kept))))
    return loaded
