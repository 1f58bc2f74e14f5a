"""JSON: one document per command, in the shapes of docs/design.md (fractions in 0..1)."""

from __future__ import annotations

import json
from typing import IO, Any

from . import Output
from .text import RENDERERS

# What `record` and `import` stored: JSON for scripts; people get a line on stderr.
RECORDED = "recorded"
# `fleet flame`'s stacks: folded stacks (the profile's output) for people, JSON for scripts.
FLEET_FLAME = "fleet-flame"


def _dump(doc: Any, fh: IO[Any]) -> None:
    json.dump(doc, fh, indent=1, default=str)
    fh.write("\n")


OUTPUT = Output(
    name="json",
    help="one JSON document, for scripts",
    # Every document people read as text is one JSON document too.
    writers=dict.fromkeys([*RENDERERS, RECORDED, FLEET_FLAME], _dump),
)
