"""Shared by the cache-mode integration tests: the stored projections and pahole's layout lines."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_runner import perfsleuth

PAHOLE_MEMBER = re.compile(r"^\s+(.+?)\s+(\w+)(\[\d+\])*;\s+/\*\s+(\d+)\s+(\d+)\s+\*/")


def cache_doc(store: Path) -> dict:
    """The first traced function's document of `perfsleuth cache show`."""
    shown = perfsleuth(store, "cache", "show", "--format", "json")
    return json.loads(shown.stdout)["functions"][0]
