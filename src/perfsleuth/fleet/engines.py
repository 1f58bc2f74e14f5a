"""The engines `--engine` names: DuckDB (embedded, the default) or Spark (engine_spark.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import Engine

ENGINES = ("duckdb", "spark")
DEFAULT_SPARK_MASTER = "local[2]"


def engine_of(
    name: str = "duckdb", spark_master: str = DEFAULT_SPARK_MASTER, endpoint: str | None = None
) -> Engine:
    """The engine called `name`; `endpoint` is an S3 store's (Spark's S3A connector needs it)."""
    if name == "spark":
        from .engine_spark import Spark  # pyspark is a large import: only when asked

        return Spark(spark_master, endpoint)
    from .engine import DuckDB  # DuckDB and Arrow load with the first query, not at start-up

    return DuckDB()
