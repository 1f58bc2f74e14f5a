"""The fleet endpoints of the JSON API (/api/fleet/...), over a fleet store.

`FleetApi(store).attach(api)` adds them to an `Api`, so they answer through
`Api.get` like every other endpoint. They call the functions the `fleet` verbs
call (fleet/queries, trends, advice) and never cache: the fleet store grows while
the page is open. Times are unix seconds; the page turns "the last hour" into
numbers, so a URL it shares names the same range on the server.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from typing import TypeVar, cast

from ..errors import UserError
from ..fleet import advice, queries, trends
from ..fleet.filters import TYPE_KEY
from ..model.fleet import LABELS, FleetStatus
from ..store.fleet import FleetStore
from ..store.fleet.label_values import label_values
from ..views import documents
from ..views.flame import diff_columns, encode, flame_columns
from ..views.keys import GROUPINGS, fleet_top_grouping
from .api import Api, ApiError, Query, Response, Route, binary_response

RANGE = ("from", "to", "where")
SIDES = tuple(f"{side}_{name}" for side in "ab" for name in RANGE)
MAX_LABEL_VALUES = 200  # per key: a picker, not an inventory
SORTS = ("self", "total")
T = TypeVar("T")


class FleetApi:
    def __init__(self, store: FleetStore) -> None:
        self.store = store
        self._told = 0  # late_symbols.notes already told

    def attach(self, api: Api) -> None:
        api.add_routes(self.routes())

    def routes(self) -> list[Route]:
        return [
            (re.compile(r"/api/fleet/status"), self.status, ()),
            (re.compile(r"/api/fleet/labels"), self.labels, ("from", "to")),
            (re.compile(r"/api/fleet/top"), self.top, (*RANGE, "by", "sort", "n")),
            (re.compile(r"/api/fleet/flame"), self.flame, RANGE),
            (re.compile(r"/api/fleet/series"), self.series, (*RANGE, "function")),
            (re.compile(r"/api/fleet/cpu"), self.cpu, RANGE),
            (re.compile(r"/api/fleet/diff"), self.diff, (*SIDES, "by", "n")),
            (re.compile(r"/api/fleet/diff/flame"), self.diff_flame, SIDES),
            (re.compile(r"/api/fleet/advise"), self.advise, (*RANGE, "core_cost")),
        ]

    def _read(self, action: Callable[[], T]) -> T:
        try:
            return action()
        except FileNotFoundError as e:
            raise ApiError(503, "the fleet store is being compacted; retry") from e
        finally:
            self._tell()

    def _tell(self) -> None:
        """What went wrong naming frames late (a debuginfod server away), on serve's
        stderr as the CLI says it, each line once."""
        notes = self.store.late_symbols.notes
        for note in notes[self._told :]:
            print(f"perfsleuth: warning: {note}", file=sys.stderr)
        self._told = len(notes)

    def status(self, query: Query) -> FleetStatus:
        return self.store.status()

    def labels(self, query: Query) -> documents.FleetLabels:
        """{"from", "to", "labels": {key: [values, sorted]}}: what --where can filter on
        in the range, user labels included."""
        start, end = _range(query)
        columns = (*LABELS, TYPE_KEY)  # the profile types of the range pick like a label
        labels = self._read(lambda: label_values(self.store.select(start, end), columns))
        shown = {k: sorted(v)[:MAX_LABEL_VALUES] for k, v in sorted(labels.items())}
        return {"from": start, "to": end, "labels": shown}

    def top(self, query: Query) -> documents.FleetTopDoc:
        start, end = _range(query)
        by = _top_grouping(query)
        sort = _choice(query, "sort", SORTS)
        n = _count(query)
        where = _one(query, "where")
        return self._read(lambda: queries.top(self.store, start, end, where, by, n, sort))

    def flame(self, query: Query) -> Response:
        """The range's flame graph in the Flame page's binary format (views/flame.py)."""
        start, end = _range(query)
        profile = self._read(lambda: queries.flame(self.store, start, end, _one(query, "where")))
        flame = flame_columns(profile)
        flame.meta.update({"from": start, "to": end})
        return binary_response(encode(flame))

    def series(self, query: Query) -> documents.FleetSeriesDoc:
        """`fleet series FUNC --format json`: the function's share per bucket."""
        start, end = _range(query)
        function = _one(query, "function")
        if not function:
            raise ApiError(400, "give function=NAME (a function of the fleet TopN)")
        where = _one(query, "where") or None
        return self._read(lambda: trends.series(self.store, function, start, end, where=where))

    def cpu(self, query: Query) -> documents.FleetCpuDoc:
        """The range's CPU time per bucket: the Fleet page's timeline."""
        start, end = _range(query)
        where = _one(query, "where") or None
        return self._read(lambda: trends.cpu_series(self.store, start, end, where=where))

    def diff(self, query: Query) -> documents.FleetDiffDoc:
        """`fleet diff --format json` of side A (a_from, a_to, a_where) and side B:
        two time ranges, or two label sets over one range."""
        a, b = _side(query, "a"), _side(query, "b")
        by = _choice(query, "by", GROUPINGS)
        n = _count(query)
        return self._read(lambda: trends.diff(self.store, a, b, by=by, n=n))

    def diff_flame(self, query: Query) -> Response:
        """Side A and side B as one tree (columns a and b), the compare page's format."""
        a, b = _side(query, "a"), _side(query, "b")
        sides = self._read(lambda: trends.side_profiles(self.store, a, b))
        return binary_response(encode(diff_columns(*sides)))

    def advise(self, query: Query) -> documents.FleetAdviceDoc:
        """`fleet advise --format json`: findings by cores saved, money with core_cost.
        Its findings are Finding JSON, which the Python side reads as dicts (FleetFinding
        types only what the fleet adds): the document is typed here, where it is served."""
        start, end = _range(query)
        cost = _number(query, "core_cost", "give the cost of one core for a month")
        options = advice.FleetAdvice(core_cost=cost)
        where = _one(query, "where") or None
        doc = self._read(lambda: advice.advise(self.store, start, end, where, options))
        return cast(documents.FleetAdviceDoc, doc)


def _one(query: Query, name: str) -> str:
    return (query.get(name) or [""])[0]


def _range(query: Query) -> tuple[float, float]:
    """[from, to) in unix seconds; the last hour when not given."""
    start, end = (_seconds(query, name) for name in ("from", "to"))
    return queries.time_range(start, end)


def _side(query: Query, side: str) -> trends.Side:
    """One side of a diff from {side}_from, {side}_to (the last hour by default), {side}_where."""
    start, end = (_seconds(query, f"{side}_{name}") for name in ("from", "to"))
    return trends.Side(*queries.time_range(start, end), _one(query, f"{side}_where"))


def _seconds(query: Query, name: str) -> float | None:
    return _number(query, name, "give unix seconds")


def _number(query: Query, name: str, hint: str) -> float | None:
    """A finite number >= 0, or None when not given."""
    text = _one(query, name)
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ApiError(400, f"bad {name}={text!r}: {hint}")
    return value


def _choice(query: Query, name: str, allowed: tuple[str, ...]) -> str:
    value = _one(query, name) or allowed[0]
    if value not in allowed:
        raise ApiError(400, f"bad {name}={value!r}: use one of {', '.join(allowed)}")
    return value


def _top_grouping(query: Query) -> str:
    try:
        return fleet_top_grouping(_one(query, "by") or "function")
    except UserError as e:
        raise ApiError(400, str(e).replace("--by ", "by=", 1)) from None


def _count(query: Query) -> int:
    text = _one(query, "n") or "0"
    if not re.fullmatch(r"[0-9]{1,6}", text):
        raise ApiError(400, f"bad n={text!r}: give a number of rows (0 = all)")
    return int(text)
