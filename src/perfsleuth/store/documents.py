"""Typed documents in the store: the class each kind of document is read back as.

A document type (model/documents.py: KIND, VERSION, UPGRADES, to_json/from_json)
registered in types() is returned by Store.documents() and Store.documents_of_kind()
as an instance of its class, upgraded once from whatever version the store holds;
no reader ever sees an older shape. Kinds not registered are returned as JSON.
Writing needs no registration: the store dumps any document that has to_json at
its type's current VERSION.

To add a type: define it in model/, then add `YourType.KIND: YourType` to types().
An upgrade that needs a reader (model/ cannot parse a file format) is finished in
COMPLETIONS: a counts document stored before its parsed tables gets them here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from ..model import documents
from ..model.documents import DocumentType


@cache
def types() -> dict[str, type[DocumentType]]:
    # imported when a document is first read: storing a run needs none of them
    from ..model.counts import Counts
    from ..model.cpu_cache import CacheProjections
    from ..model.leaf_costs import LeafCosts
    from ..model.timeline import Timeline

    return {
        Counts.KIND: Counts,
        CacheProjections.KIND: CacheProjections,
        Timeline.KIND: Timeline,
        LeafCosts.KIND: LeafCosts,
    }


@cache
def completions() -> dict[str, Callable[[Any], Any]]:
    from ..formats.tool_output.counts import with_tables
    from ..model.counts import Counts

    return {Counts.KIND: with_tables}


def decode(kind: str, data: dict[str, Any]) -> Any:
    """A stored document's JSON as its registered type, at the current version."""
    cls = types().get(kind)
    if cls is None:
        return data
    loaded = documents.load(cls, data)
    complete = completions().get(kind)
    return loaded if complete is None else complete(loaded)
