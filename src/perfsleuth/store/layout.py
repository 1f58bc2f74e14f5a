"""Where a store's files are: its folder, the DuckDB file's name and the schema version
the files are named with. Apart from runs.py so that what reads only the files beside
the database (run_index.py, answers.py) imports neither DuckDB's store nor the model
it reads: `diff` of two count runs and `top` start without them."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from pathlib import Path

SCHEMA_VERSION = 1  # runs.MIGRATIONS has this many entries
DB_NAME = "runs.duckdb"


def default_path() -> Path:
    from pathlib import Path  # the store's: the readers of the files beside it do without

    return Path(default_folder())


def default_folder() -> str:
    return os.environ.get("PERFSLEUTH_STORE") or ".perfsleuth"


def store_root(path: str | os.PathLike | None) -> Path:
    """The store folder `path` names (the default for none)."""
    from pathlib import Path

    return Path(path) if path else default_path()


def store_folder(path: str | os.PathLike[str] | None) -> str | os.PathLike[str]:
    """The store folder `path` names (the default for none), without pathlib: for the
    readers of the files kept beside the database (run_index.py, answers.py)."""
    return path if path else default_folder()
