"""The cache projections of a `--mode cache` run: one document, what `perfsleuth
cache show` prints and the web UI's Cache page draws."""

from __future__ import annotations

from typing import Any

from ..model.cpu_cache import CacheProjections
from ..store.runs import Store


def projections(store: Store, run_id: int) -> dict[str, Any] | None:
    """{"run", "functions": each traced function's projections, by name}; None for
    a run without any."""
    functions: dict[str, CacheProjections] = store.documents(run_id, CacheProjections.KIND)
    if not functions:
        return None
    traced = [functions[name].to_json() for name in sorted(functions)]
    return {"run": str(run_id), "functions": traced}


def no_projections(run_id: int) -> str:
    return (
        f"run {run_id} has no cache projections; record one with "
        "`perfsleuth record --mode cache --function FUNC -- CMD`"
    )
