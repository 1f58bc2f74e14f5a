"""Value equality for the count model's plain classes.

They are plain classes with __slots__, not dataclasses or named tuples, so that the
count views start without importing dataclasses or typing (docs/counts.md); this is the
one place that says what their equality compares. It imports nothing.
"""

from __future__ import annotations


def slot_fields(value: object) -> tuple:
    """The values of an object's __slots__, in order: what two equal ones share."""
    return tuple(getattr(value, name) for name in value.__slots__)  # type: ignore[attr-defined]
