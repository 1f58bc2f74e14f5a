"""The label values a fleet store holds over a range: what the Fleet page's filters
offer (server/fleet_api.py) and what a restarted collector's label cardinality limit
starts from (collector/cardinality.py).

A window's labels are stored per sample: the fixed ones (model.fleet.LABELS) in
columns of their own, the user's other labels as a JSON object in `labels`
(writer.py). The collector asks only for `service` of the fixed ones: pid, comm, exe,
build_id and cgroup are mostly per process, not per window, and would count every
process a host ran against a label limit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .layout import SAMPLES_SCHEMA
from .reading import Selection


def label_values(selection: Selection, fixed: Sequence[str]) -> dict[str, set[str]]:
    """{label name: values} of the samples `selection` reads: the `fixed` columns (empty
    and zero values left out) and every user label."""
    dataset = ds.dataset(selection.samples, schema=SAMPLES_SCHEMA, filesystem=selection.fs)
    columns = [*fixed, "labels"]
    table = pa.concat_tables(
        [dataset.to_table(columns=columns), selection.head.samples.select(columns)]
    )
    values: dict[str, set[str]] = {}
    for name in fixed:
        found = pc.unique(table.column(name)).to_pylist()
        values[name] = {str(v) for v in found if v not in ("", 0, None)}
    for text in pc.unique(table.column("labels")).to_pylist():
        for name, value in json.loads(text or "{}").items():
            values.setdefault(name, set()).add(str(value))
    return {name: found for name, found in values.items() if found}
