"""Unique cache lines (and bytes) a function touches: per call, their spread over
calls, per source line, and which lines are shared by most calls (stack, globals)
rather than particular to one call (the object it worked on)."""

from __future__ import annotations

import statistics
from collections import Counter

from ..model.cpu_cache import Footprint, SourceRow, Spread
from .trace import Trace

SHARED_FRACTION = 0.5  # a line touched by at least this share of calls is shared


def access_lines(address: int, size: int, shift: int) -> range:
    """The lines one access touches: two where it crosses a line boundary."""
    return range(address >> shift, ((address + size - 1) >> shift) + 1)


def call_lines(call: list, shift: int, data: bool) -> set[int]:
    lines: set[int] = set()
    for kind, address, size, _pc in call:
        if (kind != "I") == data:
            lines.update(access_lines(address, size, shift))
    return lines


def distinct_bytes(call: list, data: bool) -> int:
    spans = sorted((a, a + s) for k, a, s, _ in call if (k != "I") == data)
    total, reach = 0, 0
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def spread(values: list[int]) -> Spread:
    if not values:
        return {"min": 0, "median": 0, "mean": 0, "max": 0}
    return {
        "min": min(values),
        "median": statistics.median(values),
        "mean": statistics.fmean(values),
        "max": max(values),
    }


def project(trace: Trace) -> Footprint:
    shift = trace.line_size.bit_length() - 1
    data = [call_lines(call, shift, True) for call in trace.calls]
    code = [call_lines(call, shift, False) for call in trace.calls]
    seen_by = Counter(line for lines in data for line in lines)
    shared_at = max(2, SHARED_FRACTION * len(data))
    shared = {line for line, n in seen_by.items() if n >= shared_at}
    private = [len(lines - shared) for lines in data]
    return {
        "function": trace.function,
        "line_size": trace.line_size,
        "calls_recorded": len(trace.calls),
        "calls_total": trace.total_calls,
        "per_call": {
            "data_lines": spread([len(x) for x in data]),
            "code_lines": spread([len(x) for x in code]),
            "data_bytes": spread([distinct_bytes(c, True) for c in trace.calls]),
            "instructions": spread([sum(1 for a in c if a[0] == "I") for c in trace.calls]),
            "loads": spread([sum(1 for a in c if a[0] in "LM") for c in trace.calls]),
            "stores": spread([sum(1 for a in c if a[0] in "SM") for c in trace.calls]),
            "private_data_lines": spread(private),
        },
        "shared_data_lines": len(shared),
        "recorded_union": {
            "data_lines": len(set().union(*data)),
            "code_lines": len(set().union(*code)),
        },
        "whole_run": {
            "data_lines": trace.data_lines,
            "code_lines": trace.code_lines,
            "instructions": trace.instructions,
            "loads": trace.loads,
            "stores": trace.stores,
        },
        "by_source": by_source(trace, shift),
    }


def by_source(trace: Trace, shift: int) -> list[SourceRow]:
    """Per source line: accesses and distinct data lines per call, busiest first."""
    accesses: Counter[str] = Counter()
    lines: dict[str, set[tuple[int, int]]] = {}
    for index, call in enumerate(trace.calls):
        for kind, address, size, pc in call:
            if kind == "I":
                continue
            where = trace.source_of(pc) or f"0x{pc - trace.base:x}"
            accesses[where] += 1
            touched = access_lines(address, size, shift)
            lines.setdefault(where, set()).update((index, line) for line in touched)
    calls = max(len(trace.calls), 1)
    rows: list[SourceRow] = [
        {
            "source": where,
            "accesses_per_call": n / calls,
            "data_lines_per_call": len(lines[where]) / calls,
        }
        for where, n in accesses.items()
    ]
    return sorted(rows, key=lambda r: (-r["data_lines_per_call"], r["source"]))
