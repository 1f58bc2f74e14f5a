"""Queries read the files a selection listed; a compaction may delete some meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..errors import UserError
from ..store.fleet import FleetStore

T = TypeVar("T")
SELECT_ATTEMPTS = 3


def reading(store: FleetStore, query: Callable[[], T]) -> T:
    """The query's answer, selecting the files again when a compaction deleted one."""
    for _ in range(SELECT_ATTEMPTS - 1):
        try:
            return query()
        except FileNotFoundError:
            pass
    try:
        return query()
    except FileNotFoundError:
        raise UserError(f"files of {store.root} keep changing under the query; retry") from None
