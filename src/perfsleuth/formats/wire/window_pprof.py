"""The agent's wire format: one fleet Window as a gzipped pprof, pushed to the
collector's AGENT_ROUTE (its own; the body and query are what Pyroscope's /ingest takes).

The agent calls encode() for the body and query() for the Pyroscope-style query
string (name=SERVICE{host=...,k=v}, from, until, sampleRate, format=pprof), and
sends the window id in the WINDOW_HEADER header. The collector calls decode()
on that body, and on any other pprof pushed to it (Pyroscope's format=pprof, the
plain /pprof push): per-sample labels pid and tid (numbers), comm, exe, build_id and
cgroup (strings) give each sample its thread and its process. The shared libraries
each process had loaded (for `fleet libraries`) travel once per window, as one pprof
comment: LIBRARIES_COMMENT then a JSON object {pid: [path, ...]}.

A frame without a symbol keeps its build-id and address (model.profile.Frame) for a
later look-up (pprof_message writes them). Read back, a location without lines, or
with one line named "[unknown]...", gives its frame the build-id of its mapping and
its address when that address is the ELF's own: the mapping starts at 0 with file
offset 0 (as the agent writes it; a process address of another client's mapping would
need that file's program headers), the build-id is hex (GNU; Go's are not) and the
address is set.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from perfsleuth.errors import UserError
from perfsleuth.formats import profile_pb2 as pb
from perfsleuth.formats.pprof_message import ProfileMessage
from perfsleuth.formats.wire import ingest
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError
from perfsleuth.model.fleet import DEFAULT_TYPE, PROFILE_TYPES, Process, Window
from perfsleuth.model.profile import Frame, Profile, Thread

AGENT_ROUTE = "/agent/windows"
WINDOW_HEADER = "X-Perfsleuth-Window"  # a push's window id: sent twice, it is stored once
SAMPLES = ("samples", "count")
CPU = ("cpu", "nanoseconds")
# Sample types in nanoseconds of time: CPU (Go's runtime, async-profiler's itimer mode,
# the Pyroscope SDKs) or wall-clock (Node's wall profile).
TIME_TYPES = {"cpu": "cpu", "itimer": "cpu", "wall": "wall"}
# The other pprof sample types stored, as the profile type they are. Go's mutex and
# block profiles both say contentions/delay: the push tells which (IngestParams.lock).
OTHER_TYPES = {
    ("alloc_objects", "count"): "alloc_objects",
    ("alloc_space", "bytes"): "alloc_space",
    ("inuse_objects", "count"): "inuse_objects",
    ("inuse_space", "bytes"): "inuse_space",
    ("objects", "count"): "inuse_objects",  # Node's heap profile: what is live
    ("space", "bytes"): "inuse_space",
    ("contentions", "count"): "{lock}_contentions",
    ("delay", "nanoseconds"): "{lock}_delay",
    ("goroutine", "count"): "goroutines",
    ("goroutines", "count"): "goroutines",
}
# The type whose values count the samples of another (a count type counts itself).
COUNTED_BY = {
    "alloc_space": "alloc_objects",
    "inuse_space": "inuse_objects",
    "mutex_delay": "mutex_contentions",
    "block_delay": "block_contentions",
}
PROCESS_LABELS = ("exe", "build_id", "cgroup")
THREAD_LABELS = ("pid", "tid")
THREAD_NAME = "thread_name"  # the Pyroscope SDKs' name for comm (report_thread_name)
# The same as text (pyroscope-io's report_pid and report_thread_id): the thread's own,
# not user labels (a value per process or thread: past --max-label-values every push
# would be refused).
THREAD_TEXT_LABELS = {"pid": "pid", "thread_id": "tid"}
# Per-sample string labels that are not user labels: the thread's and process's own, and
# the per-request ids of span profiling (pyroscope-otel's span_id and trace_id), one
# window each if they were kept and past --max-label-values every push refused. A span's
# name (span_name: its operation, a few values) is a label.
SPAN_IDS = ("span_id", "trace_id", "profile_id")
NOT_USER_LABELS = ("comm", THREAD_NAME, *PROCESS_LABELS, *SPAN_IDS)
# A sample's user labels (its string labels but NOT_USER_LABELS), sorted by name.
SampleLabels = tuple[tuple[str, str], ...]
LIBRARIES_COMMENT = "perfsleuth-libraries "
MAX_LIBRARIES = 1024  # per process
# The libraries comment lists every process of a host: far longer than a name.
MAX_LIBRARIES_COMMENT = 16 << 20
NAMED_LIMIT = 1 << 17  # frames kept across pushes by name alone (folded, JFR)
_NAMED: dict[str, Frame] = {}


def query(window: Window) -> dict[str, str]:
    """The /ingest query parameters that carry the window's own labels and times."""
    labels = dict(window.labels)
    service = labels.pop("service", "")
    for key, value in labels.items():
        if any(c in value for c in ",{}="):
            raise ValueError(f"label {key}={value!r} cannot travel in a Pyroscope name")
    inner = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return {
        "name": f"{service}{{{inner}}}",
        "from": repr(window.start),
        "until": repr(window.end),
        "sampleRate": repr(window.rate_hz or 100.0),
        "spyName": "perfsleuth",
        "format": "pprof",
    }


def encode(window: Window) -> bytes:
    """The window's samples as a gzipped profile.proto with per-sample labels."""
    return gzip.compress(_Writer(window).message().SerializeToString(), compresslevel=6)


def decode(
    body: bytes,
    params: IngestParams,
    limit: int = ingest.MAX_DECOMPRESSED,
    budget: ingest.PushBudget | None = None,
) -> list[Window]:
    """A pushed pprof (gzipped or plain) as Windows, one per set of per-sample user
    labels (the first, with no such label when there is one, keeps params.window_id;
    the others add `.N`); PayloadError when it is refused. `budget` is the push's,
    when it holds several profiles."""
    budget = budget or ingest.PushBudget(limit)
    data = budget.gunzip(body)
    frames_left = ingest.MAX_PUSH_FRAMES - budget.used
    try:
        created_left = ingest.MAX_PUSH_NEW_FRAMES - budget.created
        decoded = native_reader()(data, frames_left, created_left, Frame)
    except ValueError as e:
        raise PayloadError(str(e)) from None
    budget.create(decoded["frames_created"])
    budget.spend(decoded["frames_used"])
    return _Reader(decoded).windows(params)


def native_reader(name: str = "decode_pprof") -> Callable[..., Any]:
    """perfsleuth_native's reader `name` (decode_pprof: native/src/pprof.rs says why it
    is native; decode_folded: native/src/folded.rs); a UserError when the extension is
    not built or older than this code."""
    try:
        import perfsleuth_native
    except ImportError:
        perfsleuth_native = None
    found = getattr(perfsleuth_native, name, None)
    if found is None:
        raise UserError(
            "the collector reads pprof pushes with perfsleuth's native extension, which is "
            "not installed or older than this perfsleuth; run `make native` (it needs cargo)"
        )
    return found


class _Writer:
    def __init__(self, window: Window) -> None:
        self.w = window
        self.msg = pb.Profile()
        self.interned = ProfileMessage(window.profile, self.msg)
        self.intern = self.interned.intern

    def message(self) -> pb.Profile:
        w, p, m = self.w, self.w.profile, self.msg
        ns = p.unit == "ns"
        types = [SAMPLES, CPU] if ns else [SAMPLES]
        for kind, unit in types:
            m.sample_type.add(type=self.intern(kind), unit=self.intern(unit))
        m.time_nanos = int(w.start * 1e9)
        m.duration_nanos = int((w.end - w.start) * 1e9)
        if w.rate_hz > 0:
            m.period_type.type, m.period_type.unit = self.intern(CPU[0]), self.intern(CPU[1])
            m.period = round(1e9 / w.rate_hz)
        for stack, weight, count, tid, _state in p.rows():
            values = [count, round(weight)] if ns else [count]
            location_ids = self.interned.location_ids(stack)
            sample = m.sample.add(location_id=location_ids, value=values)
            if tid >= 0:
                self._labels(sample, p.threads[tid])
        libraries = {pid: list(pr.libraries) for pid, pr in w.processes.items() if pr.libraries}
        if libraries:
            m.comment.append(self.intern(LIBRARIES_COMMENT + json.dumps(libraries)))
        return m

    def _labels(self, sample: pb.Sample, thread: Thread) -> None:
        for key, number in (("pid", thread.pid), ("tid", thread.tid)):
            if number > 0:  # the agent's -1 (not known) is no label, as the reader has it
                sample.label.add(key=self.intern(key), num=number)
        pairs = [("comm", thread.name)]
        process = self.w.processes.get(thread.pid)
        if process is not None:
            pairs += [(key, getattr(process, key)) for key in PROCESS_LABELS]
        for key, value in pairs:
            if value:
                sample.label.add(key=self.intern(key), str=self.intern(value))


class Rows:
    """One window's samples while a push is read: a row per (stack, thread), over the
    push's frames and stacks (ProfileBuilder interns every frame of every sample again)."""

    def __init__(self, unit: str, meta: dict) -> None:
        self.unit = unit
        self.meta = meta
        self.rows: dict[tuple[int, int], list] = {}
        self.threads: dict[Thread, int] = {}

    def add(self, stack: int, thread: Thread | None, weight: int, count: int) -> None:
        t = -1 if thread is None else self.threads.setdefault(thread, len(self.threads))
        row = self.rows.get((stack, t))
        if row is None:
            self.rows[stack, t] = [weight, count]
        else:
            row[0] += weight
            row[1] += count

    def profile(self, frames: list[Frame], stacks: list[tuple[int, ...]]) -> Profile:
        """The rows over the push's frames and the stacks they use."""
        return rows_profile(
            frames,
            stacks,
            ([s for s, _ in self.rows], [t for _, t in self.rows]),
            ([w for w, _ in self.rows.values()], [c for _, c in self.rows.values()]),
            list(self.threads),
            self.unit,
            self.meta,
        )


def rows_profile(
    frames: list[Frame],
    stacks: list[tuple[int, ...]],
    keys: tuple[list[int], list[int]],
    values: tuple[list, list[int]],
    threads: list[Thread],
    unit: str,
    meta: dict,
) -> Profile:
    """A window's profile of its rows (`keys`: each row's stack and thread index,
    `values`: its value and sample count), over the push's frames and the stacks it
    uses."""
    row_stacks, row_threads = keys
    used = sorted(set(row_stacks))
    at = {stack: i for i, stack in enumerate(used)}
    return Profile(
        frames=frames,
        stacks=stacks if len(used) == len(stacks) else [stacks[s] for s in used],
        sample_stack=[at[stack] for stack in row_stacks],
        sample_weight=values[0],
        sample_count=values[1],
        sample_thread=row_threads,
        sample_state=[""] * len(row_stacks),
        threads=threads,
        unit=unit,
        meta=meta,
    )


class _Reader:
    """One pprof as native.decode_pprof read and checked it: its labels, types and times
    checked here, its samples grouped into windows."""

    def __init__(self, decoded: dict) -> None:
        self.d = decoded
        self.frames = decoded["frames"]  # the same Frame object for a frame, push after push
        self.processes: dict[int, Process] = {}

    def windows(self, params: IngestParams) -> list[Window]:
        types = self.d["sample_types"]
        views = _views(types, params.lock)
        ns_per_sample = 1e9 / self._rate(params)
        label_sets = [self._read_labels(first, labels) for first, labels in self.d["label_sets"]]
        # each distinct user label set and thread a key; a time alone (pyroscope-io 1.x,
        # Node's cpu) counts the samples it is at ns_per_sample
        labels_keys: dict[SampleLabels, int] = {}
        thread_keys: dict[Thread, int] = {}
        sets = [
            (
                labels_keys.setdefault(labels, len(labels_keys)),
                -1 if thread is None else thread_keys.setdefault(thread, len(thread_keys)),
            )
            for thread, labels in label_sets
        ]
        groups = native_reader("group_samples")(
            self.d["sample_stack"],
            self.d["sample_labels"],
            self.d["values"],
            len(types),
            [(view.value, view.count, view.timed) for view in views],
            ns_per_sample,
            sets,
        )
        all_labels, threads = list(labels_keys), list(thread_keys)
        self._add_libraries()
        start, end = self._span(params)
        dsos = [{"path": path, "build_id": build_id} for path, build_id in self.d["dsos"]]
        profiles = {}
        for v, key, keys, row_stacks, row_threads, weights, counts in groups:
            view = views[v]
            meta = _meta(params, types[view.value][0] in params.cumulative)
            profiles[v, all_labels[key]] = rows_profile(
                self.frames,
                self.d["stacks"],
                (row_stacks, row_threads),
                (weights, counts),
                [threads[k] for k in keys],
                "ns" if view.timed else "samples",
                meta,
            )
        empty = [
            ((v, ()), Rows("samples", _meta(params)).profile([], [])) for v in range(len(views))
        ]
        return [
            Window(
                id=ingest.part_id(params.window_id, n),
                start=start,
                end=end,
                profile=replace(profile, frames=self.frames, dsos=dsos),
                labels=ingest.labels(params.labels | dict(labels), "sample labels"),
                processes=self.processes,
                rate_hz=params.sample_rate if views[v].rated else 0.0,
                type=views[v].type,
            )
            for n, ((v, labels), profile) in enumerate(sorted(profiles.items()) or empty)
        ]

    def _rate(self, params: IngestParams) -> float:
        """Samples per second: the profile's period in nanoseconds, else the push's rate."""
        if self.d["period_unit"] == "nanoseconds" and self.d["period"] > 0:
            return 1e9 / self.d["period"]
        return params.sample_rate

    def _add_libraries(self) -> None:
        """The processes' libraries from the window's LIBRARIES_COMMENT, checked."""
        for text in self.d["comments"]:
            if not text.startswith(LIBRARIES_COMMENT):
                continue
            ingest.text(text, "the libraries comment", MAX_LIBRARIES_COMMENT)
            found = ingest.json_document(text[len(LIBRARIES_COMMENT) :], "the libraries comment")
            if not isinstance(found, dict):
                _refuse("the libraries comment must be an object {pid: [path, ...]}")
            for pid_text, paths in found.items():
                pid = ingest.count(int(pid_text) if pid_text.isdigit() else -1, "library pid")
                self._set_libraries(pid, paths)

    def _set_libraries(self, pid: int, paths: object) -> None:
        if not isinstance(paths, list) or len(paths) > MAX_LIBRARIES:
            _refuse(f"pid {pid}: libraries must be a list of at most {MAX_LIBRARIES} paths")
        checked = []
        for path in paths:
            if not isinstance(path, str):
                _refuse(f"pid {pid}: a library path must be a string")
            checked.append(ingest.text(path, f"pid {pid} library", ingest.MAX_LABEL_VALUE))
        process = self.processes.get(pid, Process())
        self.processes[pid] = replace(process, libraries=tuple(checked))

    def _span(self, params: IngestParams) -> tuple[float, float]:
        """The push's from/until, else the profile's time_nanos and duration_nanos."""
        if params.start is not None and params.end is not None:
            return params.start, params.end
        if not self.d["time_nanos"]:
            raise PayloadError("the profile has no time_nanos: give from= and until= (unix s)")
        start = ingest.check_time(self.d["time_nanos"] / 1e9, "the profile's time_nanos")
        return start, start + ingest.count(self.d["duration_nanos"], "duration_nanos") / 1e9

    def _read_labels(
        self, index: int, pairs: list[tuple[str, str | None, int]]
    ) -> tuple[Thread | None, SampleLabels]:
        """A label set's thread and user labels (read once: a thread has many samples)."""
        owner = f"sample {index} label"
        nums: dict[str, int] = {}
        strs: dict[str, str] = {}
        for key, value, num in pairs:
            if value is not None:
                strs[key] = ingest.text(value, owner, ingest.MAX_LABEL_VALUE)
            elif key in THREAD_LABELS and num > 0:  # <= 0: not known
                nums[key] = ingest.count(num, f"{owner} {key}")
        for key, field in THREAD_TEXT_LABELS.items():
            if strs.get(key, "").isdigit():
                number = ingest.count(int(strs.pop(key)), f"{owner} {key}")
                nums.setdefault(field, number)
        user = tuple(sorted((k, v) for k, v in strs.items() if k not in NOT_USER_LABELS))
        name = strs.get("comm") or strs.get(THREAD_NAME, "")
        if not nums and not name:
            return None, user
        pid = nums.get("pid", 0)
        if pid not in self.processes and any(strs.get(k) for k in PROCESS_LABELS):
            self.processes[pid] = Process(*(strs.get(k, "") for k in PROCESS_LABELS))
        return Thread(tid=nums.get("tid", 0), pid=pid, name=name), user


@dataclass(frozen=True)
class _View:
    """One profile type read from a pprof: its values at `value`, its sample counts at
    `count` (-1: none). `rated`: counts at the push's sampleRate (the agent's samples);
    `timed`: values are nanoseconds."""

    type: str
    value: int
    count: int = -1
    rated: bool = False
    timed: bool = False


def _views(types: list[tuple[str, str]], lock: str) -> list[_View]:
    """What a pprof holds: its times (CPU, wall or both) when it has one, else the
    sampled count of CPU samples (the agent), else each of its heap, lock and goroutine
    types."""
    if not types:
        _refuse("the profile has no sample_type")
    count_at = types.index(SAMPLES) if SAMPLES in types else -1
    times = _time_views(types, count_at)
    if times:
        return times
    if count_at >= 0:
        return [_View(DEFAULT_TYPE, count_at, count_at, rated=True)]
    names = {t: OTHER_TYPES[t].format(lock=lock) for t in types if t in OTHER_TYPES}
    if not names:
        shown = ", ".join("/".join(t) for t in types)
        raise PayloadError(
            f"no profile type perfsleuth stores in sample types {shown} "
            f"(it stores {', '.join(PROFILE_TYPES)})"
        )
    at = {name: types.index(t) for t, name in names.items()}
    return [
        _View(name, at[name], at.get(COUNTED_BY.get(name, name), -1), timed=t[1] == "nanoseconds")
        for t, name in names.items()
    ]


def _time_views(types: list[tuple[str, str]], count_at: int) -> list[_View]:
    """Each time type a pprof holds, once (Node's wall profile with collectCpuTime holds
    wall and cpu): the first counted by samples/count, the others by their own time."""
    views: dict[str, _View] = {}
    for i, (kind, unit) in enumerate(types):
        name = TIME_TYPES.get(kind) if unit == "nanoseconds" else None
        if name is not None and name not in views:
            views[name] = _View(name, i, -1 if views else count_at, timed=True)
    return list(views.values())


def named_frame(name: str) -> Frame:
    """The same Frame object for a name push after push (the store's id cache finds it
    by identity), for the formats whose frames are names alone."""
    frame = _NAMED.get(name)
    if frame is None:
        if len(_NAMED) >= NAMED_LIMIT:
            _NAMED.clear()
        frame = _NAMED[name] = Frame(name)
    return frame


def _meta(params: IngestParams, cumulative: bool = False) -> dict:
    meta: dict = {"format": "pprof"}
    if params.spy_name:
        meta["spy"] = params.spy_name
    if cumulative:  # totals since the process started: the collector takes deltas
        meta["cumulative"] = True
    return meta


def _refuse(what: str) -> NoReturn:
    raise PayloadError(f"bad pprof profile: {what}")
