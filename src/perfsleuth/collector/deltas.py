"""Deltas of cumulative profiles: what a series did since its previous push.

A client that says a pprof sample type is cumulative (sample_type_config
`"cumulative": true`, as pyroscope-go did before godeltaprof; v1.5.0 sends deltas and
says `false`) pushes totals since its process started. The collector keeps each
series' previous totals per (stack, thread) in memory and stores the difference. A
series' first push is its baseline: nothing is stored for it. A value lower than
before means the process restarted: the new total is the delta. The state is lost
when the collector restarts (the next push is a baseline again) and is bounded to
MAX_SERIES series (the least recently pushed go first).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import replace

from ..model.fleet import Window
from ..model.profile import Frame, ProfileBuilder, Thread

MAX_SERIES = 10_000

_Key = tuple[tuple[Frame, ...], Thread | None]


def is_cumulative(window: Window) -> bool:
    return bool(window.profile.meta.get("cumulative"))


class Deltas:
    def __init__(self, max_series: int = MAX_SERIES) -> None:
        self.max_series = max_series
        self._totals: OrderedDict[str, dict[_Key, tuple[float, int]]] = OrderedDict()
        self._lock = threading.Lock()

    def apply(self, window: Window) -> Window | None:
        """`window` as the delta since its series' previous push; None for a baseline."""
        totals = _totals(window)
        series = json.dumps([window.type, sorted(window.labels.items())])
        with self._lock:
            before = self._totals.pop(series, None)
            self._totals[series] = totals
            while len(self._totals) > self.max_series:
                self._totals.popitem(last=False)
        if before is None:
            return None
        profile = window.profile
        builder = ProfileBuilder(profile.unit, dict(profile.meta))
        for (frames, thread), (weight, count) in totals.items():
            then_weight, then_count = before.get((frames, thread), (0.0, 0))
            if weight < then_weight or count < then_count:  # the process restarted
                then_weight, then_count = 0.0, 0
            if weight > then_weight:
                builder.add(frames, weight - then_weight, count=count - then_count, thread=thread)
        return replace(window, profile=builder.build())


def _totals(window: Window) -> dict[_Key, tuple[float, int]]:
    profile = window.profile
    totals: dict[_Key, tuple[float, int]] = {}
    for stack, weight, count, thread, _state in profile.rows():
        key = (
            tuple(profile.frames[f] for f in stack),
            profile.threads[thread] if thread >= 0 else None,
        )
        w, c = totals.get(key, (0.0, 0))
        totals[key] = (w + weight, c + count)
    return totals
