"""Where a store's files are: its folder, the DuckDB file's name and the schema version
the files are named with. Apart from runs.py so that what reads only the files beside
the database (run_index.py, answers.py) imports neither DuckDB's store nor the model
it reads: `diff` of two count runs and `top` start without them."""

from __future__ import annotations

import os
from pathlib import Path

SCHEMA_VERSION = 1  # runs.MIGRATIONS has this many entries
DB_NAME = "runs.duckdb"


def default_path() -> Path:
    return Path(os.environ.get("PERFSLEUTH_STORE") or ".perfsleuth")


def store_root(path: str | os.PathLike | None) -> Path:
    """The store folder `path` names (the default for none)."""
    return Path(path) if path else default_path()
