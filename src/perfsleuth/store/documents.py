"""Typed documents in the store: the class each kind of document is read back as.

A document type (model/documents.py: KIND, VERSION, UPGRADES, to_json/from_json)
registered in TYPES is returned by Store.documents() and Store.documents_of_kind()
as an instance of its class, upgraded once from whatever version the store holds;
no reader ever sees an older shape. Kinds not registered are returned as JSON.
Writing needs no registration: the store dumps any document that has to_json at
its type's current VERSION.

To add a type: define it in model/, then add `YourType.KIND: YourType` to TYPES.
"""

from __future__ import annotations

from typing import Any

from ..model import documents
from ..model.cache import CacheProjections
from ..model.counts import Counts
from ..model.documents import DocumentType
from ..model.timeline import Timeline

TYPES: dict[str, type[DocumentType]] = {
    Counts.KIND: Counts,
    CacheProjections.KIND: CacheProjections,
    Timeline.KIND: Timeline,
}


def decode(kind: str, data: dict[str, Any]) -> Any:
    """A stored document's JSON as its registered type, at the current version."""
    cls = TYPES.get(kind)
    return data if cls is None else documents.load(cls, data)
