"""Rollups: samples summed per minute and per hour, in the samples table's own schema.

A rollup row is the raw rows of one bucket that share every label and stack, with
`time` the bucket's start, so the same queries read raw files and rollups alike and
give the same sums for any range whose ends are bucket boundaries.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .layout import BUCKET_S, GROUP_COLUMNS, SAMPLES_SCHEMA, conform


def rollup(table: pa.Table, level: str) -> pa.Table:
    """`table`'s rows summed per bucket of `level` (minute or hour), sorted."""
    bucket_ms = BUCKET_S[level] * 1000
    table = conform(table, SAMPLES_SCHEMA)  # a compacted file of an older layout
    ms = table.column("time").cast(pa.int64())
    start = pc.multiply(pc.divide(ms, bucket_ms), bucket_ms)  # integer division floors
    bucketed = table.set_column(0, "time", start.cast(pa.timestamp("ms")))
    summed = bucketed.group_by(list(GROUP_COLUMNS), use_threads=False).aggregate(
        [("samples", "sum"), ("cpu_ns", "sum")]
    )
    summed = summed.rename_columns(
        [{"samples_sum": "samples", "cpu_ns_sum": "cpu_ns"}.get(n, n) for n in summed.column_names]
    )
    return sort_samples(summed.select(SAMPLES_SCHEMA.names).cast(SAMPLES_SCHEMA))


def sort_samples(table: pa.Table) -> pa.Table:
    """Rows ordered so equal labels and stacks sit together: long runs compress to little."""
    keys = ["service", "host", "exe", "comm", "pid", "stack_id", "time"]
    return table.sort_by([(k, "ascending") for k in keys])
