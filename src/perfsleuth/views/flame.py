"""The flame graph: every stack merged root first, a node per distinct path, as flat,
typed columns. This is the one build of the call tree: the web UI's flame, sandwich and
time-order pages (through the API), the fleet flame graph and the single-file report draw it.

Nested dicts would make a million nodes in ~10 s on a run with 100,000 distinct stacks,
and a JSON document the browser needs seconds to parse. Here the tree is built in one pass over
the stacks sorted root-first (siblings then come out in name order and each node
is created once, when its prefix first appears), and sent as binary columns that
the browser maps straight into typed arrays:

    u32 header length | header JSON | padding to 8 | f64 column per value |
    i32 name index per node | u16 depth per node

Values are float64: weights are exact as stored (a run of 9,029,117,580 ns is not
9,029,117,952 as float32 would make it), and the padding lets the browser view them
as a Float64Array in place.

Nodes are in pre-order, so a node's children follow it; the UI derives parents,
subtree ends and layout from depth alone.
"""

from __future__ import annotations

import json
import struct
from array import array
from dataclasses import dataclass, field

from ..formats.py_spy import is_python_frame
from ..model.profile import Frame, Profile

KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"
# a Python function (py-spy): never merged with a native function of the same name
PYTHON_SUFFIX = "_[py]"
MAX_DEPTH = 65535
ON_CPU_STATES = ("", "running")


def frame_label(frame: Frame) -> str:
    if frame.kernel:
        return frame.function + KERNEL_SUFFIX
    if frame.inlined:
        return frame.function + INLINE_SUFFIX
    if is_python_frame(frame):
        return frame.function + PYTHON_SUFFIX
    return frame.function


@dataclass
class FlameColumns:
    names: list[str]
    name: array = field(default_factory=lambda: array("i"))
    depth: array = field(default_factory=lambda: array("H"))
    values: dict[str, array] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    # per stack of the profile, the node its samples end at (-1: no sample); from
    # flame_columns only, for the time order (views/timeline.py)
    leaf: array = field(default_factory=lambda: array("i"))


def _label_paths(profile: Profile) -> tuple[list[str], list[tuple[int, ...]]]:
    """Names sorted, and per stack its root-first path of name indices."""
    labels = [frame_label(f) for f in profile.frames]
    names = sorted(set(labels))
    rank = {n: i for i, n in enumerate(names)}
    label_of = [rank[label] for label in labels]
    rank_of = label_of.__getitem__
    paths = [tuple(map(rank_of, reversed(stack[-MAX_DEPTH:]))) for stack in profile.stacks]
    return names, paths


Row = tuple[tuple[int, ...], tuple[float, ...]]  # root-first name path, one value per column


def _build(
    names: list[str], rows: list[Row], columns: tuple[str, ...]
) -> tuple[FlameColumns, dict[tuple[int, ...], int]]:
    """The merged call tree of (path, values) rows, one value column per name; and the
    node each distinct path ends at."""
    rows.sort(key=lambda r: r[0])
    ends: dict[tuple[int, ...], int] = {}
    out = FlameColumns(names=names)
    name, depth = out.name, out.depth
    own: list[list[float]] = [[0.0] for _ in columns]  # weight ending at each node
    name.append(-1)
    depth.append(0)
    node = 0
    previous: tuple[int, ...] = ()
    for path, values in rows:
        if path != previous:
            common = 0
            limit = min(len(path), len(previous))
            while common < limit and path[common] == previous[common]:
                common += 1
            # Sorted paths put a prefix before its extensions, so every new path
            # adds at least one node and ends at the last one added.
            name.extend(path[common:])
            depth.extend(range(common + 1, len(path) + 1))
            for column in own:
                column.extend([0.0] * (len(path) - common))
            node = ends[path] = len(name) - 1
            previous = path
        for c, v in enumerate(values):
            own[c][node] += v
    out.values = {c: _subtree_sums(depth, column) for c, column in zip(columns, own, strict=True)}
    return out, ends


def _subtree_sums(depth: array, own: list[float]) -> array:
    """Each node's weight plus its descendants', by one backwards pass over pre-order."""
    totals = list(own)
    pending = [0.0] * (max(depth, default=0) + 2)  # sum of finished children per depth
    for i in range(len(totals) - 1, -1, -1):
        d = depth[i]
        totals[i] += pending[d + 1]
        pending[d + 1] = 0.0
        pending[d] += totals[i]
    return array("d", totals)


def flame_columns(profile: Profile) -> FlameColumns:
    """Total weight per node; plus off-CPU weight when the run has thread states."""
    names, paths = _label_paths(profile)
    has_states = any(s not in ON_CPU_STATES for s in profile.sample_state)
    columns = ("total", "off") if has_states else ("total",)
    rows: list[Row] = []
    for sid, w, s in zip(
        profile.sample_stack, profile.sample_weight, profile.sample_state, strict=True
    ):
        values = (w, 0.0 if s in ON_CPU_STATES else w) if has_states else (w,)
        rows.append((paths[sid], values))
    flame, ends = _build(names, rows, columns)
    flame.meta = {"unit": profile.unit, "total": profile.total}
    flame.leaf = array("i", [ends.get(path, -1) for path in paths])
    return flame


def diff_columns(a: Profile, b: Profile) -> FlameColumns:
    """One tree over both runs with columns "a" and "b" (each run's own weights)."""
    names_a, paths_a = _label_paths(a)
    names_b, paths_b = _label_paths(b)
    names = sorted(set(names_a) | set(names_b))
    rank = {n: i for i, n in enumerate(names)}
    rows: list[Row] = []
    for profile, local, paths, first in ((a, names_a, paths_a, True), (b, names_b, paths_b, False)):
        to_global = [rank[n] for n in local]
        for sid, w in zip(profile.sample_stack, profile.sample_weight, strict=True):
            path = tuple(to_global[i] for i in paths[sid])
            rows.append((path, (w, 0.0) if first else (0.0, w)))
    flame, _ = _build(names, rows, ("a", "b"))
    flame.meta = {"unit": b.unit, "total_a": a.total, "total_b": b.total}
    return flame


def encode(flame: FlameColumns) -> bytes:
    header = json.dumps(
        {
            **flame.meta,
            "nodes": len(flame.name),
            "columns": list(flame.values),
            "names": flame.names,
        },
        ensure_ascii=False,
    ).encode()
    padding = b" " * (-(4 + len(header)) % 8)
    parts = [struct.pack("<I", len(header) + len(padding)), header, padding]
    parts += [column.tobytes() for column in flame.values.values()]
    parts += [flame.name.tobytes(), flame.depth.tobytes()]
    return b"".join(parts)
