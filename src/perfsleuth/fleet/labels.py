"""Who runs what: CPU time per label value (service, host, exe, ...) and stack.

The engine's stack weights say what the fleet runs; these tables say where. `fleet top
--by service|host` sums them per value, and the advice names the services and hosts
whose samples a finding's stacks account for.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..model.fleet import LABEL_GROUPINGS as LABEL_GROUPINGS  # kept here for its readers
from ..store.fleet import FleetStore
from .engine import DuckDB, Engine, RangeQuery
from .filters import parse
from .retry import reading


@dataclass(frozen=True)
class Share:
    """One label value's part of a range: CPU ns (of what was asked, and of everything)."""

    value: str
    cpu_ns: int
    samples: int
    of_value: int  # the value's whole CPU ns in the range

    @property
    def share(self) -> float:
        return self.cpu_ns / self.of_value if self.of_value else 0.0


@dataclass(frozen=True)
class LabelWeights:
    """Rows of (label values..., stack_id, samples, cpu_ns) for one range and filter."""

    labels: tuple[str, ...]
    table: pa.Table

    def shares(self, label: str, stacks: Collection[int] | None = None) -> list[Share]:
        """Per value of `label`, the CPU ns of `stacks` (all when None), heaviest first."""
        values = self.table.column(label).to_pylist()
        stack_ids = self.table.column("stack_id").to_pylist()
        cpu = self.table.column("cpu_ns").to_pylist()
        counts = self.table.column("samples").to_pylist()
        whole: defaultdict[str, int] = defaultdict(int)
        part: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
        for value, stack, ns, n in zip(values, stack_ids, cpu, counts, strict=True):
            whole[value] += ns
            if stacks is None or stack in stacks:
                part[value][0] += ns
                part[value][1] += n
        found = [Share(v, ns, n, whole[v]) for v, (ns, n) in part.items() if ns]
        return sorted(found, key=lambda s: (-s.cpu_ns, s.value))


def weights(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None,
    labels: Sequence[str],
    engine: Engine | None = None,
) -> LabelWeights:
    conditions = parse(where)
    run = engine or DuckDB()

    def query() -> pa.Table:
        selection = store.select(start, end)
        return run.label_weights(RangeQuery(selection, start, end, conditions), labels)

    table = reading(store, query)
    return LabelWeights(tuple(labels), table)


def top(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None,
    by: str,
    n: int,
    engine: Engine | None = None,
) -> dict:
    """`fleet top --by service|host|label:NAME`: each value of the label `by` names, its
    share of the range's CPU time."""
    found = weights(store, start, end, where, [by], engine).shares(by)
    total = sum(s.cpu_ns for s in found)
    rows = [
        {
            by: s.value,
            "function": "",
            "dso": "",
            "file": "",
            "line": 0,
            "self": s.cpu_ns / total,
            "total": s.cpu_ns / total,
            "samples": s.samples,
        }
        for s in found[: n if n > 0 else None]
    ]
    samples = sum(s.samples for s in found)
    return {"unit": "ns", "total": float(total), "samples": samples, "by": by, "rows": rows}
