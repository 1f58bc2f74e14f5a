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

from ..model.profile import Frame, Profile, is_python_frame

KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"
# a Python function (py-spy): never merged with a native function of the same name
PYTHON_SUFFIX = "_[py]"
# a process, the level under the root when a run sampled more than one: `main` of g++
# and `main` of cc1plus stay apart
PROCESS_SUFFIX = "_[p]"
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
    # with a process level: each thread's process (an index), and the node a stack's
    # samples in a process end at
    thread_process: list[int] = field(default_factory=list)
    process_leaf: dict[tuple[int, int], int] = field(default_factory=dict)

    def leaf_for(self, stack: int, thread: int) -> int:
        """The node where the samples of `stack` on `thread` end; -1 if none."""
        if not self.thread_process:
            return self.leaf[stack]
        process = self.thread_process[thread] if thread >= 0 else -1
        return self.process_leaf.get((stack, process), -1)


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


def flame_columns(profile: Profile, processes: bool = False) -> FlameColumns:
    """Total weight per node; plus off-CPU weight when the run has thread states. With
    `processes` (a run's pages, not the fleet's, whose pids are many hosts'), a run that
    sampled several processes gets a level of them under the root."""
    names, paths = _label_paths(profile)
    thread_process, process_names = _processes(profile) if processes else ([], [])
    first_process = len(names)
    names = names + process_names
    has_states = any(s not in ON_CPU_STATES for s in profile.sample_state)
    columns = ("total", "off") if has_states else ("total",)
    rows: list[Row] = []
    placed: dict[tuple[int, int], tuple[int, ...]] = {}  # (stack, process): its path
    for sid, w, s, t in zip(
        profile.sample_stack,
        profile.sample_weight,
        profile.sample_state,
        profile.sample_thread,
        strict=True,
    ):
        values = (w, 0.0 if s in ON_CPU_STATES else w) if has_states else (w,)
        if thread_process:  # the per-sample work of a process level only where there is one
            process = thread_process[t] if t >= 0 else -1
            path = paths[sid] if process < 0 else (first_process + process, *paths[sid])
            placed[sid, process] = path
        else:
            path = paths[sid]
        rows.append((path, values))
    flame, ends = _build(names, rows, columns)
    flame.meta = {"unit": profile.unit, "total": profile.total}
    flame.leaf = array("i", [ends.get(path, -1) for path in paths])
    if thread_process:
        flame.thread_process = thread_process
        flame.process_leaf = {key: ends[path] for key, path in placed.items()}
    return flame


def _processes(profile: Profile) -> tuple[list[int], list[str]]:
    """Each thread's process index and the processes' labels (`name (pid)_[p]`), when
    the samples come from two processes or more; else ([], [])."""
    pids = sorted({profile.threads[t].pid for t in set(profile.sample_thread) if t >= 0})
    if len(pids) < 2:
        return [], []
    named: dict[int, str] = {}
    for thread in profile.threads:  # the main thread's name, else the first one's
        if thread.tid == thread.pid or thread.pid not in named:
            named[thread.pid] = thread.name
    index = {pid: k for k, pid in enumerate(pids)}
    thread_process = [index.get(t.pid, -1) for t in profile.threads]
    return thread_process, [f"{named.get(pid) or '?'} ({pid}){PROCESS_SUFFIX}" for pid in pids]


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
