"""JSON: one document per command, the shapes of DESIGN.md (fractions in 0..1)."""

from __future__ import annotations

import json
from typing import IO, Any

from . import Output
from .text import RENDERERS


def _dump(doc: Any, fh: IO[Any]) -> None:
    json.dump(doc, fh, indent=1, default=str)
    fh.write("\n")


OUTPUT = Output(
    name="json",
    help="one JSON document, for scripts",
    # Every document people read as text is one JSON document too.
    writers=dict.fromkeys(RENDERERS, _dump),
)
