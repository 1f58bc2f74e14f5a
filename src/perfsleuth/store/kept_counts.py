"""A count run's counts document kept in answers/ as well, as the store has it, so that
`diff` of two count runs reads it through the run index (run_index.py) without importing
DuckDB: importing it cost more CPU than cg_diff's whole diff of speedtest1 (docs/counts.md).

Kept when `record` stores the run, or else the first time `diff` loads it from DuckDB;
a stored run never changes, and the file's name carries the code's stamp like every
file there.
"""

from __future__ import annotations

import json
from functools import partial

from ..model import documents
from ..model.counts import Counts
from ..model.run import LoadedRun, Recording, RunInfo
from .answers import AnswerFiles
from .documents import decode
from .runs import Store

COUNTS_FILE = "counts"
KEY = (Counts.KIND, Counts.NAME)  # the counts document among a run's documents


def keep(store: Store, info: RunInfo, counts: Counts | None) -> None:
    """Keep a count run's counts document in answers/ (nothing for other runs)."""
    if counts is not None:
        text = json.dumps(documents.dump(counts), default=str)
        AnswerFiles(store.root).keep(info, COUNTS_FILE, text.encode())


def keep_recorded(store: Store, info: RunInfo, recording: Recording) -> None:
    """Keep the counts document of a run just stored, if it has one: the first `diff`
    after two count runs were recorded then does not import DuckDB either."""
    stored = (d.data for d in recording.documents if (d.kind, d.name) == KEY)
    keep(store, info, next((c for c in stored if isinstance(c, Counts)), None))


def load(store: Store, *refs: str | None) -> list[LoadedRun] | None:
    """The count runs `refs` name with their counts, read from their kept files: their
    facts are only id, start and unit, their profile is read from DuckDB if asked for.
    None when the index is stale or a run's counts are not kept (load them from DuckDB)."""
    loaded = []
    for ref in refs:
        run = store.indexed(ref)
        kept = None if run is None else AnswerFiles(store.root).kept(*run.key, COUNTS_FILE)
        if run is None or kept is None:
            return None
        counts = decode(Counts.KIND, json.loads(kept))
        info = RunInfo(id=run.id, started=run.started, unit=run.unit)
        loaded.append(LoadedRun(info, partial(store.load, run.id), counts=counts))
    return loaded
