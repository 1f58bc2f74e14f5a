"""Typed, versioned documents kept with a run (counts, cache projections, ...).

A document type says its store `KIND`, its current `VERSION` and its `UPGRADES`:
entry i turns the JSON of version i + 1 into version i + 2, as the store's schema
MIGRATIONS do for tables (append, never edit). `load` upgrades a stored JSON once,
when it is read, so every reader sees only the current shape; `dump` writes the
current version. Documents written before versions existed count as version 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from ..errors import UserError

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]


class DocumentType(Protocol):
    KIND: ClassVar[str]
    VERSION: ClassVar[int]
    UPGRADES: ClassVar[Sequence[Upgrade]]

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Any: ...

    def to_json(self) -> dict[str, Any]: ...


T = TypeVar("T")


def version_of(doc: dict[str, Any]) -> int:
    return int(doc.get("version", 1))


def upgrade(cls: type[DocumentType], doc: dict[str, Any]) -> dict[str, Any]:
    """The JSON of `doc` at cls.VERSION, or a UserError for a newer document."""
    if len(cls.UPGRADES) != cls.VERSION - 1:
        raise AssertionError(f"{cls.__name__}: VERSION {cls.VERSION} needs VERSION - 1 UPGRADES")
    version = version_of(doc)
    if version > cls.VERSION:
        raise UserError(
            f"this store holds a {cls.KIND} document of version {version}, newer than this "
            f"perfsleuth understands ({cls.VERSION}); upgrade perfsleuth"
        )
    for step in cls.UPGRADES[version - 1 :]:
        doc = step(doc)
    return {**doc, "version": cls.VERSION}


def load(cls: type[T], doc: dict[str, Any]) -> T:
    """A stored document as its current type."""
    return cls.from_json(upgrade(cls, doc))  # type: ignore[arg-type, attr-defined, no-any-return]


def dump(document: DocumentType) -> dict[str, Any]:
    """A document's JSON, stamped with its type's version."""
    return {**document.to_json(), "version": type(document).VERSION}
