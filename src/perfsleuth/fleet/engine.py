"""The query engine seam: SQL over the three tables of a Selection.

Queries (queries.py) need one thing from an engine: the samples of a time range and
label filter summed per stack, joined with the stacks and the frames they use. That is
all the work proportional to the number of samples; the rest works on distinct stacks.
An engine registers `samples`, `stacks` and `frames` over a Selection's files and runs
these statements in its dialect. DuckDB here, embedded, reading the files through
pyarrow datasets (so S3 works without DuckDB's httpfs extension).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds

from ..errors import UserError
from ..model.fleet import DEFAULT_TYPE, LABELS
from ..store.fleet.layout import FRAMES_SCHEMA, SAMPLES_SCHEMA, STACKS_SCHEMA
from ..store.fleet.reading import Selection
from .filters import TYPE_KEY, Condition
from .kept_files import KEPT

# Frames of all the distinct stacks a query reads (a busy fleet's day has about 10**6).
MAX_QUERY_FRAMES = 1 << 24
# How DuckDB words a file that went away while it read (pyarrow's, then the OS's), or an
# object gone from S3 (the AWS SDK's RESOURCE_NOT_FOUND, NoSuchKey, NO_SUCH_KEY or a
# 404; a GetObject of a Parquet file a compaction deleted during the scan says
# "AWS Error NO_SUCH_KEY during GetObject operation").
GONE = re.compile(
    r"Path does not exist|No such file or directory|\[errno 2\]"
    r"|RESOURCE_NOT_FOUND|NoSuchKey|NO_SUCH_KEY|HTTP 404"
)
BUCKETS_SCHEMA = pa.schema(
    [
        ("bucket", pa.int64()),
        ("stack_id", pa.int64()),
        ("samples", pa.int64()),
        ("cpu_ns", pa.int64()),
    ]
)


@dataclass(frozen=True)
class StackWeights:
    """Per distinct stack of the range: its frame ids (leaf first), samples and CPU ns."""

    stacks: pa.Table  # stack_id, frame_ids, samples, cpu_ns
    frames: pa.Table  # FRAMES_SCHEMA rows of every frame those stacks use


@dataclass(frozen=True)
class RangeQuery:
    """What every statement of an engine reads: the selected files, the samples whose
    window started in [start, end) (seconds from the epoch) and that meet `where`."""

    selection: Selection
    start: float
    end: float
    where: list[Condition]


class Engine(Protocol):
    def stack_weights(self, query: RangeQuery) -> StackWeights: ...

    def label_weights(self, query: RangeQuery, labels: Sequence[str]) -> pa.Table:
        """Rows of (label values..., stack_id, samples, cpu_ns), ordered by all columns."""
        ...

    def bucket_weights(self, query: RangeQuery, step_ms: int) -> pa.Table:
        """Rows of BUCKETS_SCHEMA: samples and CPU ns per stack in each bucket of step_ms
        milliseconds from the epoch (bucket = time in ms // step_ms)."""
        ...


def _label(key: str) -> str:
    if key == TYPE_KEY:  # files written before the column hold CPU profiles
        return f"coalesce(type, '{DEFAULT_TYPE}')"
    if key == "pid":
        return "CAST(pid AS VARCHAR)"
    if key in LABELS:
        return key
    return f"coalesce(json_extract_string(labels, '$.\"{key}\"'), '')"


def _condition(c: Condition) -> str:
    match = f"regexp_full_match({_label(c.key)}, ?)"
    return {
        "=": f"{_label(c.key)} = ?",
        "!=": f"{_label(c.key)} <> ?",
        "=~": match,
        "!~": f"NOT {match}",
    }[c.op]


def _past_bigint(error: duckdb.Error) -> UserError:
    """A sum past the 64-bit columns, as one line: each push is bounded (2**53 ns), so
    only a great many absurd pushes get there."""
    return UserError(
        "the range's samples or CPU ns sum past 2**63 (clients pushed absurd values): "
        f"narrow --from/--to or --where ({str(error).splitlines()[0][:120]})"
    )


def check_frames(frames: int | None) -> None:
    """Refuse a query whose distinct stacks hold more than MAX_QUERY_FRAMES frames in all:
    past it their frame lists alone take gigabytes in this process."""
    if frames is not None and frames > MAX_QUERY_FRAMES:
        raise UserError(
            f"the range's distinct stacks hold {frames:,} frames in all, more than the "
            f"{MAX_QUERY_FRAMES:,} a query reads: narrow --from/--to or --where"
        )


def check_regexes(con: duckdb.DuckDBPyConnection, where: list[Condition]) -> None:
    """Each regex of `where` compiled by DuckDB's engine (RE2), whose refusal is a
    one-line UserError: RE2 has no backreferences nor lookaround, which Python's has."""
    for c in where:
        if c.op.endswith("~"):
            try:
                con.execute("SELECT regexp_full_match('', ?)", [c.value]).fetchall()
            except duckdb.Error as e:
                reason = str(e).splitlines()[0].removeprefix("Invalid Input Error: ")
                raise UserError(
                    f"bad regular expression {c.value[:80]!r} in --where: DuckDB's regex engine "
                    f"(RE2) refuses it ({reason}); RE2 does not support backreferences or "
                    "lookaround"
                ) from None


F = TypeVar("F", bound=Callable)


def files_may_go(query: F) -> F:
    """A listed file a compaction or retention deleted since the selection, raised as
    the FileNotFoundError that makes the query select again (fleet/retry.py)."""

    @functools.wraps(query)
    def reading(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return query(*args, **kwargs)
        except duckdb.Error as e:
            if GONE.search(str(e)):
                raise FileNotFoundError(str(e).splitlines()[0]) from None
            raise

    return reading  # type: ignore[return-value]


class DuckDB:
    """Fleet queries embedded in this process."""

    @files_may_go
    def stack_weights(self, query: RangeQuery) -> StackWeights:
        con = connect()
        try:
            check_regexes(con, query.where)
            for name in ("samples", "stacks", "frames"):
                register(con, query.selection, name)
            con.execute(
                f"""CREATE TEMP TABLE weights AS
                SELECT w.stack_id, s.frame_ids, w.samples, w.cpu_ns
                FROM (SELECT stack_id, sum(samples) AS samples, sum(cpu_ns) AS cpu_ns
                      FROM samples
                      WHERE {_range_filter(query)}
                      GROUP BY stack_id) w
                JOIN (SELECT DISTINCT stack_id, frame_ids FROM stacks) s USING (stack_id)""",
                _range_params(query),
            )
            check_frames(con.execute("SELECT sum(len(frame_ids)) FROM weights").fetchall()[0][0])
            stacks = con.sql("SELECT * FROM weights ORDER BY stack_id").to_arrow_table()
            frames = con.sql(
                """SELECT DISTINCT f.* FROM frames f
                WHERE frame_id IN (SELECT unnest(frame_ids) FROM weights)
                ORDER BY frame_id"""
            ).to_arrow_table()
        finally:
            con.close()
        return StackWeights(_table(stacks), _table(frames).cast(FRAMES_SCHEMA))

    @files_may_go
    def label_weights(self, query: RangeQuery, labels: Sequence[str]) -> pa.Table:
        """CPU ns and samples per value of `labels` and stack: who runs which stacks."""
        keys = ", ".join(f"{_label(k)} AS {_quoted(k)}" for k in labels)
        return _grouped_sums(query, keys, [], "ORDER BY ALL")

    @files_may_go
    def bucket_weights(self, query: RangeQuery, step_ms: int) -> pa.Table:
        key = "epoch_ms(time::TIMESTAMP) // ?::BIGINT AS bucket"
        return _grouped_sums(query, key, [step_ms]).cast(BUCKETS_SCHEMA)


def _range_filter(query: RangeQuery) -> str:
    """The WHERE clause of the query's samples; its parameters are _range_params'."""
    conditions = "".join(f" AND {_condition(c)}" for c in query.where)
    return (
        "time >= make_timestamp(?::BIGINT * 1000)"
        f" AND time < make_timestamp(?::BIGINT * 1000){conditions}"
    )


def _range_params(query: RangeQuery) -> list:
    return [to_ms(query.start), to_ms(query.end), *[c.value for c in query.where]]


def _grouped_sums(query: RangeQuery, keys: str, key_params: list, order: str = "") -> pa.Table:
    """Samples and CPU ns of the query's range summed per `keys` (SQL, with `key_params`)
    and stack, in one DuckDB query over the selected samples files."""
    con = connect()
    try:
        check_regexes(con, query.where)
        register(con, query.selection, "samples")
        result = con.sql(
            f"""SELECT {keys}, stack_id,
                   sum(samples)::BIGINT AS samples, sum(cpu_ns)::BIGINT AS cpu_ns
            FROM samples
            WHERE {_range_filter(query)}
            GROUP BY ALL {order}""",
            params=[*key_params, *_range_params(query)],
        ).to_arrow_table()
    except duckdb.ConversionException as e:
        raise _past_bigint(e) from None
    finally:
        con.close()
    return _table(result)


SCHEMAS = {"samples": SAMPLES_SCHEMA, "stacks": STACKS_SCHEMA, "frames": FRAMES_SCHEMA}


def register(con: duckdb.DuckDBPyConnection, selection: Selection, name: str) -> None:
    """View `name` of `con`: the table's rows in the selected files (the small ones
    kept in memory, kept_files.py) and in the head."""
    schema = SCHEMAS[name]
    kept, scanned = KEPT.split(selection.fs, getattr(selection, name), schema)
    con.register(f"{name}_files", ds.dataset(scanned, schema=schema, filesystem=selection.fs))
    con.register(f"{name}_kept", pa.concat_tables([kept, getattr(selection.head, name)]))
    con.execute(
        f"CREATE TEMP VIEW {name} AS SELECT * FROM {name}_files UNION ALL SELECT * FROM {name}_kept"
    )


@functools.cache
def _database() -> duckdb.DuckDBPyConnection:
    """The process's one in-memory DuckDB: a query's connection is a cursor of it (its
    views its own), as a new database cost a query ~17 ms of CPU and ~50 ms at load."""
    return duckdb.connect()


_CURSORS = threading.Lock()


def connect() -> duckdb.DuckDBPyConnection:
    with _CURSORS:  # the shared connection is not documented as safe across threads
        return _database().cursor()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def to_ms(t: float) -> int:
    """Unix seconds as whole milliseconds, the stored time's resolution (no float drift)."""
    return round(t * 1000)


def _table(result: pa.Table | pa.RecordBatchReader) -> pa.Table:
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result
