"""The cache projections of one traced function (`record --mode cache`), kept as one
document per function: what `perfsleuth cache show` prints, the web UI's Cache page
draws (its TypeScript types are generated from these: views/documents.SCHEMA) and the
cache analyzers read.

cpu_cache_projections/ computes each section from the function's memory trace; the TypedDicts
below are their JSON, stored as it is. Versions (model/documents.py):

1. Every document written before documents had versions. Cache mode grew fields
   while it was version 1, so such a document may lack: `layouts` (it has only
   `layout`, the pointer parameter's struct); a layout's `variable`,
   `variable_kind` and `visits`; a field's `bit_offset`, `bit_size`, `bytes`,
   `ancestor` and `fixed`; the scaling's `tlb`, its runs' `data_pages`,
   `line_offsets` and `touched_offsets`; a cliff's `capacity_source`,
   `working_set`, `usable_share` and `usable_lines`.
2. All of them present, holding what was true when they were missing: the one
   layout is the parameter's, one visit per call; fields are whole bytes, none
   placed by the language; no TLB cliff was predicted, pages and places in the
   page were not counted (None); cliffs come from sysfs sizes, the fitted working
   set and every set of their level.
3. `sampling`: which calls were traced. Older documents traced the first calls
   (`chosen: "first"`, 1 in 1), stopped when --max-calls were in or at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NotRequired, TypedDict

from .documents import Upgrade

USABLE_SHOWN = 0.995  # below this usable share, the reports say the sets limit the cliff


class Spread(TypedDict):
    min: float
    median: float
    mean: float
    max: float


class PerCall(TypedDict):
    data_lines: Spread
    code_lines: Spread
    data_bytes: Spread
    instructions: Spread
    loads: Spread
    stores: Spread
    private_data_lines: Spread


class RecordedUnion(TypedDict):
    data_lines: int
    code_lines: int


class WholeRun(TypedDict):
    data_lines: int
    code_lines: int
    instructions: int
    loads: int
    stores: int


class SourceRow(TypedDict):
    source: str  # "file:line", else the offset in the executable
    accesses_per_call: float
    data_lines_per_call: float


class Footprint(TypedDict):
    function: str
    line_size: int
    calls_recorded: int
    calls_total: int
    per_call: PerCall
    shared_data_lines: int
    recorded_union: RecordedUnion
    whole_run: WholeRun
    by_source: list[SourceRow]  # busiest first


class InnerField(TypedDict):
    """A member inside a base class or struct member, its offset from the outer struct."""

    name: str  # its path inside the member: `_M_storage.second.id`
    type: str
    offset: int
    size: int
    line: int
    touched: float
    hot: bool


class LayoutField(TypedDict):
    """A member as pahole gives it: a bitfield's offset and size are its storage
    unit's, `bytes` what its bits occupy."""

    name: str
    type: str
    offset: int
    size: int
    bit_offset: int | None
    bit_size: int | None
    bytes: int
    ancestor: bool  # a C++ base class
    fixed: bool  # placed by the language (base class, vtable pointer): never moved
    line: int
    touched: float  # share of the visits touching it
    hot: bool
    inside: NotRequired[list[InnerField]]  # a base class's or struct member's own members


class LayoutLine(TypedDict):
    line: int
    hot_fields: list[str]
    cold_fields: list[str]
    hot_bytes: int
    touched: float


class Move(TypedDict):
    move: list[str]
    from_line: int
    to_line: int
    swap_out: list[str]


class Reorder(Move):
    lines_per_object_before: int
    lines_per_object_after: int


class LayoutOwner(TypedDict):
    """The variable a layout is of."""

    parameter: str | None
    variable: str
    # local: a local pointer (`f = &t[i]`); member: a pointer held in a struct (`s->peer`)
    variable_kind: Literal["parameter", "local", "member", "global", "static"]
    # global and static variables only
    address: NotRequired[int]
    elements: NotRequired[int]
    elements_touched: NotRequired[int]


class StructLayout(LayoutOwner):
    """The struct one variable holds, each field hot or cold; a visit is one call's
    work on one object (for an array, on one element)."""

    available: Literal[True]
    struct: str
    size: int
    line_size: int
    object_misalignment: int
    calls: int
    visits: int
    # the distinct objects (array elements) the visits reached; not kept before
    # issue 29's fresh round
    objects: NotRequired[int]
    fields: list[LayoutField]
    lines: list[LayoutLine]
    lines_touched_per_call: float
    reorder: Reorder | None
    pahole: str


class Sampling(TypedDict):
    """Which calls were traced: the first ones, 1 in k fixed (--sample-calls K), or
    1 in k with k doubled as the run went on ("auto": the calls traced spread over
    the whole run, or over what ran of it within budget_s). The footprint's
    whole-run totals cover the traced calls."""

    chosen: Literal["first", "fixed", "auto"]
    every: int
    calls_seen: int
    calls_traced: int
    budget_s: float | None
    out_of_time: bool  # stopped by budget_s before the program ended


class NoLayout(TypedDict):
    available: Literal[False]
    reason: str


Layout = StructLayout | NoLayout


class LevelSpec(TypedDict):
    name: str
    size: int
    ways: int


class GeometrySpec(TypedDict):
    line_size: int
    prefetch: bool
    levels: list[LevelSpec]


def run_first_touches(run: ScaledRun) -> str:
    """` (0.27 first touches)`: of a scaled run's misses per call, those of a line's
    first touch (a miss in every level: the model starts empty); empty for runs
    recorded before they were counted."""
    first = run.get("first_touches")
    return "" if first is None else f" ({first / max(run['calls'], 1):.2f} first touches)"


def levels_text(geometry: GeometrySpec) -> str:
    """`L1d 32K, L2 512K, LLC 12M`: the sizes a simulation used."""
    return ", ".join(f"{lv['name']} {lv['size'] // 1024:,}K" for lv in geometry["levels"])


class Simulation(TypedDict):
    """The cache model's misses over the recorded calls."""

    geometry: GeometrySpec
    describe: str
    accesses: int
    # a sampled trace's misses are expected values (cpu_cache_projections/sampled_reuse.py)
    misses: dict[str, float]
    misses_per_call: dict[str, float]
    # of them, accesses to a line the model had never brought in (it starts empty):
    # misses in every level; None where not counted (a sample without its spatial part)
    first_touches_per_call: NotRequired[float | None]
    # of them, per level, the second line's miss of an access that crosses a line
    # boundary and misses both (cachegrind and callgrind count one miss for it)
    split_misses_per_call: NotRequired[dict[str, float]]
    per_call: list[list[float]]
    by_source: dict[str, dict[str, float]]  # source -> "accesses" and misses per level


class MeasuredRun(TypedDict):
    """One run of the command at one n, its data accesses watched by the cache model."""

    n: int
    data_lines: int  # distinct lines the code touched
    data_pages: int
    cached_lines: int  # distinct lines the model brought in, demand or prefetch
    line_offsets: list[int]  # lines brought in per place in the page
    touched_offsets: list[int]  # lines touched per place in the page
    calls: int
    misses: dict[str, int]
    first_touches: int  # of the misses, a line's first touch: a miss in every level


class ScaledRun(TypedDict):
    """A MeasuredRun as stored; None: recorded before that was counted."""

    n: int
    data_lines: int
    data_pages: int | None
    cached_lines: int
    line_offsets: list[int] | None
    touched_offsets: list[int] | None
    calls: int
    misses: dict[str, int]
    first_touches: NotRequired[int]  # not counted in runs recorded before
    misses_per_call: dict[str, float]


class Fit(TypedDict):
    of: str  # the working set fitted: "cached_lines" or "data_lines"
    touched_lines_per_n: float
    touched_intercept_lines: float
    intercept_lines: float
    lines_per_n: float
    bytes_per_n: float


class TlbLimit(TypedDict, total=False):
    """This machine's TLB reach (cpu_cache_projections/calibrate.py), or why it is not known."""

    reason: str
    reach_pages: int
    page_size: int
    transparent_huge_pages: str  # the kernel's mode: madvise or never (always: no reach)
    measured_at: str
    evidence: str


class LlcLimit(TypedDict, total=False):
    """This machine's effective LLC capacity (cpu_cache_projections/calibrate.py), or why it
    is not known."""

    reason: str
    effective_bytes: int
    nominal_bytes: int | None
    measured_at: str
    evidence: str


class Limits(TypedDict, total=False):
    tlb: TlbLimit
    llc: LlcLimit


class Effective(LlcLimit):
    available: bool


class Capacity(TypedDict):
    capacity_lines: int
    capacity_source: Literal["sysfs", "measured"]
    # the last level of several only
    effective: NotRequired[Effective]
    nominal_capacity_lines: NotRequired[int]  # measured: sysfs's capacity ...
    nominal_n: NotRequired[int | None]  # ... and its cliff


class Placement(TypedDict):
    """Where a cliff falls against the scaled range."""

    n: int | None
    in_range: bool
    # already over at the smallest n: n, if any, is extrapolated below the range
    below_range: bool


class Cliff(Capacity):
    level: str
    working_set: str  # the fit the cliff comes from
    # the room a neighbour the prefetcher brought in and nobody touched takes, as a
    # share of a line's (cpu_cache_projections/model.py); absent: 1
    prefetched_room: NotRequired[float]
    usable_share: float  # of the capacity, the sets the working set's lines map to can use
    usable_lines: int
    n: int | None
    in_range: bool
    # already over at the smallest n: n, if any, is extrapolated below the range
    below_range: NotRequired[bool]


class PageSteps(TypedDict):
    """Pages that grow by a table's doublings (cpu_cache_projections/doubling.py):
    intercept + per_n * n + per_capacity_n * (the n at which it doubles next)."""

    intercept: float
    per_n: float
    per_capacity_n: float  # pages per n the table holds before it doubles
    doubles_at_n: float  # it doubles past doubles_at_n * 2^k: the middle of ...
    doubles_between: list[float]  # ... the two runs around a doubling, scaled to it


class TlbCliff(TlbLimit):
    available: Literal[True]
    intercept_pages: float
    pages_per_n: float
    steps: NotRequired[PageSteps]  # when the pages grow by doubling (then the cliff is from these)
    n: int | None
    in_range: bool
    below_range: NotRequired[bool]


class NoTlbCliff(TypedDict):
    available: Literal[False]
    reason: str


class Scaling(TypedDict):
    runs: list[ScaledRun]
    fit: Fit
    range: list[int]  # [lowest n, highest n]
    cliffs: list[Cliff]
    tlb: TlbCliff | NoTlbCliff
    geometry: GeometrySpec  # the one the runs' misses were simulated with


class Difference(TypedDict):
    variant: int
    differs: bool
    what: str
    first_source: str
    call: NotRequired[int]
    pc: NotRequired[int]


class ConstantTime(TypedDict):
    function: str
    variants: int
    constant_time: bool
    differences: list[Difference]  # only those that differ
    instructions_per_variant: list[int]


def limited_by_sets(cliff: Cliff) -> bool:
    """Whether the reports should say that the sets the working set's lines can use
    bring this cliff forward."""
    return cliff["usable_share"] < USABLE_SHOWN


def owner(layout: StructLayout) -> str:
    """Whose struct it is: `*param`, `*f`, `*s->peer`, `global stats`, `static table[4096]`."""
    if layout["variable_kind"] in ("parameter", "local", "member"):
        return f"*{layout['variable']}"
    elements = layout.get("elements", 1)
    return f"{layout['variable_kind']} {layout['variable']}" + (
        f"[{elements}]" if elements > 1 else ""
    )


def parting_text(difference: Difference) -> str:
    """Where the secrets' runs part: the source line, or, when the function ran a
    different number of times, that its callers decide it."""
    if difference["first_source"]:
        return f"{difference['what']} first at {difference['first_source']}"
    return f"{difference['what']}: its callers' branches decide it; trace the caller"


def sampling_text(sampling: Sampling) -> str:
    """'1 in 1,024 calls traced (205 of 209,920, ...)', or '' for the first calls."""
    if sampling["chosen"] == "first":
        return ""
    where = "up to the time budget" if sampling["out_of_time"] else "over the whole run"
    return (
        f"1 in {sampling['every']:,} calls traced ({sampling['calls_traced']:,} of "
        f"{sampling['calls_seen']:,}, {where})"
    )


def few_calls_text(scaling: Scaling) -> str:
    """A warning when a scaled run called the function fewer times than its n: if
    each call works on one of the n items, the calls reached at most that many of
    them, and the working set measured there falls short of n's ('' when none did)."""
    short = [run for run in scaling["runs"] if run.get("calls", run["n"]) < run["n"]]
    if not short:
        return ""
    at = ", ".join(f"n = {run['n']:,} ({run['calls']:,} calls)" for run in short)
    return (
        f"fewer calls traced than n at {at}: if each call works on one of the n items, "
        "the calls reached at most that many of them, so the working set measured there "
        "is short of n's and the cliffs come late; run at least n operations at each n"
    )


def _first_calls(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 2 -> 3: the first calls were traced."""
    footprint = doc["footprint"]
    first: Sampling = {
        "chosen": "first",
        "every": 1,
        "calls_seen": footprint.get("calls_total", 0),
        "calls_traced": footprint.get("calls_recorded", 0),
        "budget_s": None,
        "out_of_time": False,
    }
    return {**doc, "sampling": first}


def _fill_v1_gaps(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2 (see the module's docstring)."""
    layout = _v1_layout(doc["layout"])
    if "layouts" in doc:
        layouts = [_v1_layout(each) for each in doc["layouts"]]
    else:
        layouts = [layout] if layout["available"] else []
    doc = {**doc, "layout": layout, "layouts": layouts}
    if "scaling" in doc:
        doc["scaling"] = _v1_scaling(doc["scaling"])
    return doc


def _v1_layout(layout: dict[str, Any]) -> dict[str, Any]:
    if not layout["available"]:
        return layout
    parameter = {"variable": layout.get("parameter"), "variable_kind": "parameter"}
    return {
        **parameter,
        "visits": layout.get("calls"),
        **layout,
        "fields": [_v1_field(field) for field in layout.get("fields", [])],
    }


def _v1_field(field: dict[str, Any]) -> dict[str, Any]:
    defaults = {"bit_offset": None, "bit_size": None, "ancestor": False, "fixed": False}
    return {**defaults, "bytes": field["size"], **field}


def _v1_scaling(scaling: dict[str, Any]) -> dict[str, Any]:
    fitted = scaling["fit"].get("of", "data_lines")
    not_counted = {"data_pages": None, "line_offsets": None, "touched_offsets": None}
    return {
        "tlb": {"available": False, "reason": "recorded before TLB cliffs were predicted"},
        **scaling,
        "runs": [not_counted | run for run in scaling["runs"]],
        "cliffs": [_v1_cliff(cliff, fitted) for cliff in scaling["cliffs"]],
    }


def _v1_cliff(cliff: dict[str, Any], fitted: str) -> dict[str, Any]:
    every_set = {"usable_share": 1.0, "usable_lines": cliff["capacity_lines"]}
    return {"capacity_source": "sysfs", "working_set": fitted, **every_set, **cliff}


@dataclass(frozen=True)
class CacheProjections:
    """One traced function's projections; stored under its name, KIND "cache"."""

    KIND: ClassVar[str] = "cache"
    VERSION: ClassVar[int] = 3
    UPGRADES: ClassVar[Sequence[Upgrade]] = (_fill_v1_gaps, _first_calls)

    function: str
    executable: str
    footprint: Footprint
    layout: Layout  # the first of `layouts`, or why there is none
    layouts: list[StructLayout]  # the pointer parameter's, then globals by accesses
    model: Simulation
    sampling: Sampling
    scaling: Scaling | None = None  # --scale
    constant_time: ConstantTime | None = None  # --variants

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "function": self.function,
            "executable": self.executable,
            "footprint": self.footprint,
            "layout": self.layout,
            "layouts": self.layouts,
            "model": self.model,
            "sampling": self.sampling,
        }
        if self.scaling is not None:
            doc["scaling"] = self.scaling
        if self.constant_time is not None:
            doc["constant_time"] = self.constant_time
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CacheProjections:
        return cls(
            function=doc["function"],
            executable=doc["executable"],
            footprint=doc["footprint"],
            layout=doc["layout"],
            layouts=doc["layouts"],
            model=doc["model"],
            sampling=doc["sampling"],
            scaling=doc.get("scaling"),
            constant_time=doc.get("constant_time"),
        )
