"""The counts document of a run (model/counts.py), as the store holds it."""

from __future__ import annotations

from ..errors import UserError
from ..model.counts import Counts
from .runs import Store


def find_counts(store: Store, run_id: int) -> Counts | None:
    """The run's exact counts, or None for a run not recorded with `--mode count`."""
    found: Counts | None = store.documents(run_id, Counts.KIND).get(Counts.NAME)
    return found


def require_counts(store: Store, run_id: int) -> Counts:
    """The exact counts of a count run, or a clear error for any other run."""
    counts = find_counts(store, run_id)
    if counts is None:
        raise UserError(
            f"run {run_id} has no exact counts; record one with "
            "`perfsleuth record --mode count -- CMD`"
        )
    return counts
