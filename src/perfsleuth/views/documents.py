"""The shapes of the documents the views, the ranking and the web API hand out, typed once.

`scripts/gen_documents.py` makes the web UI's TypeScript types
(ui/src/generated/documents.ts, which ui/src/types.ts re-exports) and the JSON Schemas in
docs/schemas/ from `SCHEMA` below; `make lint` fails when they are not current. A view
annotates what it returns with its type here, so mypy checks the Python side and tsc the
UI side of one contract. A new field of the Finding dataclass reaches the UI by itself.

`CHOICES` are the choice lists the API serves (`/api/choices`) for the UI's selects and
chips, instead of the UI typing them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from ..model import cpu_cache
from ..model import fleet as fleet_model
from ..model.findings import Finding
from ..model.states import STATES
from .keys import FLEET_TOP_GROUPINGS, GROUPINGS

UNKNOWN_STATE = "unknown"  # samples recorded without a thread state
STATE_ORDER = (*STATES, UNKNOWN_STATE)


class PlacedFinding(TypedDict):
    """A finding where rank.py put it (the Finding's JSON plus these)."""

    gain: float  # the effective gain the order used
    gain_measured: bool  # an A/B experiment measured it
    hidden_because: NotRequired[str]


class Advice(TypedDict):
    """rank.Advice: a run's findings in the order to fix them, those left out and why."""

    kind: Literal["advice"]
    version: int
    run: str
    advised: bool
    findings: list[PlacedFinding]
    hidden: int
    hidden_findings: list[PlacedFinding]
    notes: list[str]
    src_roots: list[str]


class RunSummary(TypedDict):
    id: str
    command: str
    mode: str
    started: str
    duration_s: float | None
    exit_status: int | None
    unit: str
    total: float
    samples: int
    top_finding: NotRequired[PlacedFinding | None]


class Dso(TypedDict):
    path: str
    build_id: str


class ThreadFacts(TypedDict):
    tid: int
    pid: int
    name: str


class RunDetail(RunSummary):
    cwd: str
    host: str
    cpu_model: str
    kernel: str
    git_rev: str
    source: str
    dsos: list[Dso]
    threads: list[ThreadFacts]
    states: list[str]
    findings: int
    experiments: int
    cache_functions: int


class ThreadRow(TypedDict):
    tid: int
    pid: int
    name: str
    total: float
    share: float
    states: dict[str, float]  # fraction of the thread's own time per state
    # where the run samples instants (views/threads.py): the thread's samples, and each
    # state's 95% margin (the fraction is within it of the thread's time in the state)
    samples: NotRequired[int]
    margins: NotRequired[dict[str, float]]


class ThreadsDoc(TypedDict):
    run: str
    unit: str
    total: float
    threads: list[ThreadRow]


class TopRow(TypedDict):
    function: str
    dso: str
    file: str
    line: int
    self: float
    total: float
    # a count run's exact self count of each event callgrind counted (Ir, and with
    # --cache-sim the D1/LL misses), as cg_annotate's columns
    counts: NotRequired[dict[str, int]]
    # a count run's deeper recursion level (f'2) whose calls nest in one another: its
    # total is its first level's, which holds it, an upper bound of its own
    total_at_most: NotRequired[bool]
    # the fleet's TopN by a label (fleet/labels.py): its value under the label's name (the
    # document's `label`; service and host typed here, label:NAME's any NAME), its samples
    service: NotRequired[str]
    host: NotRequired[str]
    samples: NotRequired[int]


class TopView(TypedDict):
    """views/top.top(): the TopN of a profile; views/top.exact_top(): of a count run's
    exact counts (no samples; `exact` names the event counted)."""

    unit: str
    total: float
    samples: int
    exact: NotRequired[str]
    events: NotRequired[list[str]]  # a count run's events, in callgrind's order
    # False for counts without calls (cachegrind's): each row's total is only its self
    inclusive: NotRequired[bool]
    by: str
    rows: list[TopRow]


class TopDoc(TopView):
    run: str


class Neighbour(TypedDict):
    function: str
    total: float
    share: float


class CallGraphDoc(TypedDict):
    function: str
    self: float
    total: float
    callers: list[Neighbour]
    callees: list[Neighbour]


class SourceLine(TypedDict):
    line: int
    self: float
    total: float
    source: str


class SourceFile(TypedDict):
    file: str
    found: bool
    path: str | None  # the file served (None: under no source root)
    root: str | None  # the source root it was found under
    self: float
    total: float  # of its hottest line: a function's inclusive share for its annotate
    lines: list[SourceLine]


class AnnotateDoc(TypedDict):
    function: str
    files: list[SourceFile]


class DiffRow(TypedDict):
    function: str
    dso: str
    file: str
    line: int
    self_a: float
    self_b: float
    delta_self: float
    total_a: float
    total_b: float
    delta_total: float
    abs_a: float  # self weight in the run's own unit
    abs_b: float


class DiffView(TypedDict):
    """views/diff.diff(): two sampled runs' shares per key."""

    unit: str
    total_a: float
    total_b: float
    by: str
    rows: list[DiffRow]


class DiffDoc(DiffView):
    a: str
    b: str


class Experiment(TypedDict):
    name: str
    data: Any
    verdicts: list[str]  # what `perfsleuth compare` / `try` print (experiments/verdict.py)


class CacheDoc(TypedDict):
    """views/cpu_cache.projections(): a `--mode cache` run's traced functions, by name."""

    run: str
    functions: list[cpu_cache.CacheProjections]


class Choices(TypedDict):
    """The choice lists the UI offers (`/api/choices`)."""

    groupings: list[str]  # --by / ?by= of TopN and diff
    label_groupings: list[str]  # the fleet's groupings by label
    fleet_top_groupings: list[str]  # the fleet TopN's: groupings, library, label groupings
    states: list[str]  # STATE_ORDER: thread states, then "unknown"


# -- the fleet's documents (/api/fleet/...; the `fleet` verbs' --format json) ----------

# "from" is a Python keyword: the fleet's ranges are typed in the functional syntax.
Span = TypedDict("Span", {"from": float, "to": float})  # unix seconds, [from, to)


class FleetRange(Span):
    """A range of the fleet and the label filter over it (`--where`, "" for none)."""

    where: str


class FleetTopDoc(TopView, FleetRange):
    """fleet/queries.top(): `perfsleuth top`'s document over the fleet."""

    run: Literal["fleet"]
    type: str  # the profile type (model/fleet.PROFILE_TYPES)
    # by a label (service, host, label:NAME): its name; each row holds its value under it
    label: NotRequired[str]


class FleetLabels(Span):
    """The label values `--where` can filter on in the range, by label."""

    labels: dict[str, list[str]]


class FleetPoint(Span):
    """One bucket of a series: its CPU time and the function's self and total share of it."""

    cpu_ns: float
    samples: int
    self: float
    total: float


class FleetCpuDoc(FleetRange):
    """fleet/trends.cpu_series(): the range's CPU time per bucket."""

    step: float
    type: str
    unit: str
    points: list[FleetPoint]


class FleetSeriesDoc(FleetCpuDoc):
    """fleet/trends.series(): a function's share per bucket."""

    function: str


class FleetDiffDoc(DiffView):
    """fleet/trends.diff(): views/diff's document of two sides of the fleet."""

    a: FleetRange
    b: FleetRange


class FleetFrame(TypedDict):
    function: str
    dso: str
    file: str
    line: int


class FleetStack(TypedDict):
    frames: list[FleetFrame]  # root first
    cpu_ns: float
    samples: int


class FleetFlameDoc(FleetRange):
    """fleet/queries.flame_json(): `fleet flame --format json`, each distinct stack of the
    range, heaviest first."""

    type: str
    unit: str
    total: float
    samples: int
    stacks: list[FleetStack]


class FleetLibrary(TypedDict):
    """A library a rule can replace, loaded somewhere in the fleet: where, and how hot."""

    rule: str
    library: str  # the file loaded
    replacement: str
    hosts: list[str]
    services: list[str]
    programs: list[str]
    share: float  # the rule's share of the fleet's CPU time
    hot: bool  # share >= the rule's min_share


class FleetLibrariesDoc(FleetRange):
    """fleet/libraries.libraries(): `fleet libraries --format json`."""

    windows: int
    libraries: list[FleetLibrary]


class FleetPlace(TypedDict):
    """A service or host a fleet finding applies to: its share of the value's CPU time
    and the cores it keeps busy there."""

    share: float
    cores: float
    service: NotRequired[str]
    host: NotRequired[str]


class FleetFinding(TypedDict):
    """fleet/advice.fleet_finding(): the Finding's JSON plus where it applies and what
    fixing it saves."""

    cores_saved: float
    estimated_cores_saved: NotRequired[float]  # before a verified experiment's measure
    money_per_month: NotRequired[float]  # with a core cost
    services: list[FleetPlace]
    hosts: list[FleetPlace]
    hosts_count: int
    same_hot_spot: NotRequired[str]  # the rule of a finding on the same samples


class FleetAdviceDoc(FleetRange):
    """fleet/advice.advise(): the range's findings by cores saved."""

    cores: float  # busy on average over the range
    findings: list[FleetFinding]
    hidden: int
    notes: list[str]


def choices() -> Choices:
    return {
        "groupings": list(GROUPINGS),
        "label_groupings": list(fleet_model.LABEL_GROUPINGS),
        "fleet_top_groupings": list(FLEET_TOP_GROUPINGS),
        "states": list(STATE_ORDER),
    }


@dataclass(frozen=True)
class Entry:
    """One type of SCHEMA: its name in TypeScript and the schema, its Python type, and
    the types it extends (the UI's `interface X extends Y, Z`)."""

    name: str
    type: Any  # a TypedDict, a dataclass, or a union of them (a TypeScript type alias)
    extends: tuple[str, ...] = ()


SCHEMA = (
    Entry("Finding", Finding),
    Entry("PlacedFinding", PlacedFinding, extends=("Finding",)),
    Entry("Advice", Advice),
    Entry("RunSummary", RunSummary),
    Entry("Dso", Dso),
    Entry("ThreadFacts", ThreadFacts),
    Entry("RunDetail", RunDetail, extends=("RunSummary",)),
    Entry("ThreadRow", ThreadRow),
    Entry("ThreadsDoc", ThreadsDoc),
    Entry("TopRow", TopRow),
    Entry("TopView", TopView),
    Entry("TopDoc", TopDoc, extends=("TopView",)),
    Entry("Neighbour", Neighbour),
    Entry("CallGraphDoc", CallGraphDoc),
    Entry("SourceLine", SourceLine),
    Entry("SourceFile", SourceFile),
    Entry("AnnotateDoc", AnnotateDoc),
    Entry("DiffRow", DiffRow),
    Entry("DiffView", DiffView),
    Entry("DiffDoc", DiffDoc, extends=("DiffView",)),
    Entry("Experiment", Experiment),
    Entry("Choices", Choices),
    # the CPU cache model's projections (model/cpu_cache.py), the Cache page's
    Entry("CacheDoc", CacheDoc),
    Entry("CacheFunction", cpu_cache.CacheProjections),
    Entry("Spread", cpu_cache.Spread),
    Entry("PerCall", cpu_cache.PerCall),
    Entry("RecordedUnion", cpu_cache.RecordedUnion),
    Entry("WholeRun", cpu_cache.WholeRun),
    Entry("SourceRow", cpu_cache.SourceRow),
    Entry("Footprint", cpu_cache.Footprint),
    Entry("InnerField", cpu_cache.InnerField),
    Entry("LayoutField", cpu_cache.LayoutField),
    Entry("LayoutLine", cpu_cache.LayoutLine),
    Entry("Move", cpu_cache.Move),
    Entry("Reorder", cpu_cache.Reorder, extends=("Move",)),
    Entry("LayoutOwner", cpu_cache.LayoutOwner),
    Entry("StructLayout", cpu_cache.StructLayout, extends=("LayoutOwner",)),
    Entry("NoLayout", cpu_cache.NoLayout),
    Entry("Layout", cpu_cache.Layout),
    Entry("Sampling", cpu_cache.Sampling),
    Entry("CacheLevel", cpu_cache.LevelSpec),
    Entry("Geometry", cpu_cache.GeometrySpec),
    Entry("CacheModelDoc", cpu_cache.Simulation),
    Entry("MeasuredRun", cpu_cache.MeasuredRun),
    Entry("ScaledRun", cpu_cache.ScaledRun),
    Entry("Fit", cpu_cache.Fit),
    Entry("TlbLimit", cpu_cache.TlbLimit),
    Entry("LlcLimit", cpu_cache.LlcLimit),
    Entry("Limits", cpu_cache.Limits),
    Entry("Effective", cpu_cache.Effective, extends=("LlcLimit",)),
    Entry("Capacity", cpu_cache.Capacity),
    Entry("Cliff", cpu_cache.Cliff, extends=("Capacity",)),
    Entry("PageSteps", cpu_cache.PageSteps),
    Entry("TlbCliff", cpu_cache.TlbCliff, extends=("TlbLimit",)),
    Entry("NoTlbCliff", cpu_cache.NoTlbCliff),
    Entry("Scaling", cpu_cache.Scaling),
    Entry("Difference", cpu_cache.Difference),
    Entry("ConstantTime", cpu_cache.ConstantTime),
    # the fleet's (/api/fleet/...)
    Entry("Span", Span),
    Entry("FleetRange", FleetRange, extends=("Span",)),
    Entry("FleetTopDoc", FleetTopDoc, extends=("TopView", "FleetRange")),
    Entry("FleetLabels", FleetLabels, extends=("Span",)),
    Entry("FleetPoint", FleetPoint, extends=("Span",)),
    Entry("FleetCpuDoc", FleetCpuDoc, extends=("FleetRange",)),
    Entry("FleetSeriesDoc", FleetSeriesDoc, extends=("FleetCpuDoc",)),
    Entry("FleetDiffDoc", FleetDiffDoc, extends=("DiffView",)),
    Entry("FleetFrame", FleetFrame),
    Entry("FleetStack", FleetStack),
    Entry("FleetFlameDoc", FleetFlameDoc, extends=("FleetRange",)),
    Entry("FleetLibrary", FleetLibrary),
    Entry("FleetLibrariesDoc", FleetLibrariesDoc, extends=("FleetRange",)),
    Entry("FleetPlace", FleetPlace),
    Entry("FleetFinding", FleetFinding, extends=("Finding",)),
    Entry("FleetAdviceDoc", FleetAdviceDoc, extends=("FleetRange",)),
    Entry("FleetHost", fleet_model.FleetHost),
    Entry("StoreCost", fleet_model.StoreCost),
    Entry("FleetStatus", fleet_model.FleetStatus),
)
