"""Pyroscope's Java agent push (/ingest?format=jfr): a JFR recording by async-profiler.

The body is multipart/form-data: a `jfr` part holding the recording (gzipped) and,
when the program set labels (Pyroscope.LabelsWrapper), a `labels` part: a protobuf
LabelsSnapshot {contexts: {context id: {labels: {key id: value id}}}, strings: {id:
text}} whose context ids the events' `contextId` field names.

A recording is one or more chunks. A chunk: a 68-byte header (magic FLR\\0, version,
size, offsets of its constant pool and metadata, start, ticks per second, features:
bit 0 says integers are LEB128-style varints, as async-profiler writes them; a chunk of
fixed-width integers is refused, not read), then events, each
`size type fields...`. Event 0 is the metadata: a string table and a tree of elements
whose `class` elements give every type's id, name and fields (`class` type id,
`constantPool` true when the field holds a key into that type's pool, `dimension` 1
for an array). Event 1 is a checkpoint: constant pools (threads, stack traces, methods,
classes, symbols...) as lists of (key, value). Every other event is read by its type's
fields, and the ones below become samples of the store's profile types, as Pyroscope
reads them (grafana/jfr-parser): an execution sample is a CPU sample (not when its
thread state is STATE_SLEEPING; with the `wall` event also a wall sample), a wall-clock
sample its `samples` wall samples (and CPU samples when its thread is STATE_RUNNABLE),
an allocation event one object of its TLAB size (outside a TLAB, its own size), a
monitor enter one mutex contention of its duration, a park one block contention.

A frame is named as Pyroscope names it: the class in the JVM's form (slashes) and the
method, `java/util/HashMap.get`; classes the JVM generates with a number in their name
(lambdas, reflection accessors) lose the number, so they are the same frame run after
run. Everything read is bounded by the bytes it sits in (counts, lengths, nesting);
anything else is a PayloadError.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError

from perfsleuth.formats.wire import ingest, window_pprof
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError
from perfsleuth.formats.wire.jfr_labels_pb2 import LabelsSnapshot
from perfsleuth.model.fleet import Window
from perfsleuth.model.profile import Frame, Thread

MAGIC = b"FLR\0"
HEADER = struct.Struct(">4sHHqqqqqqqi")
COMPRESSED_INTEGERS = 1
METADATA_EVENT, CHECKPOINT_EVENT = 0, 1
MAX_NESTING = 16  # types inside types, elements inside elements
# Events of one push: a 10 s push of a busy JVM holds some tens of thousands.
MAX_EVENTS = 1 << 20
STEPS_PER_BYTE = 1  # array items read per byte of a chunk, at most (see _Input.items)
CHUNK_HEADER_TYPE = "jdk.types.ChunkHeader"  # a pool value that is a chunk header's bytes
# The events read, each as the profile types it adds to: (type, the field giving the
# value, None: 1 a sample). CPU and wall samples are counted at the push's sampleRate.
EVENTS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "jdk.ExecutionSample": (("cpu", None),),
    "profiler.WallClockSample": (("wall", "samples"), ("cpu", "samples")),
    "jdk.ObjectAllocationInNewTLAB": (("alloc_objects", None), ("alloc_space", "tlabSize")),
    "jdk.ObjectAllocationOutsideTLAB": (
        ("alloc_objects", None),
        ("alloc_space", "allocationSize"),
    ),
    "jdk.ObjectAllocationSample": (("alloc_objects", None), ("alloc_space", "weight")),
    # PYROSCOPE_ALLOC_LIVE: the sampled allocations still alive at the dump, in use
    "profiler.LiveObject": (("inuse_objects", None), ("inuse_space", "allocationSize")),
    "jdk.JavaMonitorEnter": (("mutex_contentions", None), ("mutex_delay", "duration")),
    "jdk.ThreadPark": (("block_contentions", None), ("block_delay", "duration")),
}
RATED = ("cpu", "wall")  # samples at the push's sampleRate
TIMED = ("mutex_delay", "block_delay")  # values in ticks, stored in nanoseconds
# When a sample of an event is also a CPU sample: (thread state, whether it must be it
# or must not be it); a sample without a state is a CPU sample of an execution sample.
CPU_STATES = {
    "jdk.ExecutionSample": ("STATE_SLEEPING", False),
    "profiler.WallClockSample": ("STATE_RUNNABLE", True),
}
SETTING_EVENT = "jdk.ActiveSetting"
# A numbered class the JVM generates: a lambda's (`App$$Lambda$74.0x00007f55dc087588`,
# `App$$Lambda.0x...`) or a reflection accessor's (`GeneratedMethodAccessor31`).
GENERATED = (
    (re.compile(r"^(.+\$\$Lambda)(?:\$?\d*[./](?:0x)?[\da-f]+|\d+)$"), r"\1_"),
    (re.compile(r"^(jdk/internal/reflect/GeneratedMethodAccessor)\d+$"), r"\1_"),
)
PRIMITIVE_BYTES = {"boolean": 1, "byte": 1, "char": 2, "short": 2, "int": 4, "long": 8}
FLOATS = {"float": struct.Struct(">f"), "double": struct.Struct(">d")}


def decode(
    recording: bytes,
    labels: bytes,
    params: IngestParams,
    budget: ingest.PushBudget,
) -> list[Window]:
    """The Windows of a JFR push (its recording and its labels part, b"" when none):
    one per profile type and set of per-sample labels."""
    contexts = _contexts(_gunzip(labels, "labels", budget)) if labels else {}
    data = _gunzip(recording, "jfr", budget)
    if not data:
        raise PayloadError("the JFR recording is empty")
    samples = _Samples(params, contexts, budget)
    pos = 0
    while pos < len(data):
        pos = _Chunk(data, pos, samples).read()
    return samples.windows()


def _gunzip(data: bytes, part: str, budget: ingest.PushBudget) -> bytes:
    """A part inflated (when gzipped); its PayloadError names the part."""
    try:
        return budget.gunzip(data)
    except PayloadError as e:
        raise PayloadError(f"the `{part}` part: {e}") from None


@dataclass
class _Field:
    name: str
    type_id: int
    pooled: bool
    array: bool


@dataclass
class _Type:
    name: str
    fields: list[_Field] = field(default_factory=list)

    def at(self, name: str) -> int:
        """The index of the field `name` in the type's values, -1 without one."""
        return next((i for i, f in enumerate(self.fields) if f.name == name), -1)


class _Input:
    """Bytes read from `pos` up to `end` (the chunk's); reading past it is an IndexError."""

    def __init__(self, data: bytes, pos: int, end: int, chunk: _Chunk) -> None:
        self.data = data
        self.pos = pos
        self.end = end
        self.strings = chunk.strings
        self.steps = chunk.steps

    def byte(self) -> int:
        if self.pos >= self.end:
            raise IndexError
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        """An unsigned varint of up to 9 bytes (the 9th keeps all 8 bits)."""
        data, pos = self.data, self.pos
        if pos < self.end and data[pos] < 0x80:  # most are one byte
            self.pos = pos + 1
            return data[pos]
        return self.varints(1)[0]

    def varints(self, n: int) -> tuple[int, ...]:
        """`n` varints: a struct of only integer and pooled fields (a stack frame, most
        events) read in one call, the bytes decoded inline (a push's stack frames are
        most of its values: a call per value was half its reading)."""
        data, pos, end = self.data, self.pos, self.end
        values = []
        for _ in range(n):
            value = shift = 0
            while True:
                if pos >= end:
                    raise IndexError
                b = data[pos]
                pos += 1
                if shift == 56:
                    value |= b << 56
                    break
                value |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
            values.append(value)
        self.pos = pos
        return tuple(values)

    def take(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise IndexError
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def count(self) -> int:
        """A count of things each at least a byte long: at most the bytes left."""
        n = self.varint()
        if n > self.end - self.pos:
            raise PayloadError(f"bad JFR recording: a count of {n} at byte {self.pos}")
        return n

    def items(self) -> int:
        """An array's length, taken from the chunk's steps (an array of empty values
        takes no bytes: the steps bound what arrays of arrays expand to)."""
        n = self.count()
        self.steps[0] -= n
        if self.steps[0] < 0:
            raise PayloadError("bad JFR recording: its arrays hold more items than its bytes")
        return n

    def string(self) -> str | None:
        kind = self.byte()
        if kind == 0:
            return None
        if kind == 1:
            return ""
        if kind == 2:
            return self.strings.get(self.varint(), "")
        if kind == 3:
            return self.take(self.count()).decode("utf-8", "replace")
        if kind == 4:
            return "".join(chr(min(self.varint(), 0x10FFFF)) for _ in range(self.count()))
        if kind == 5:
            return self.take(self.count()).decode("latin-1")
        raise PayloadError(f"bad JFR recording: string encoding {kind} at byte {self.pos}")


Reader = Callable[[_Input], Any]


class _Types:
    """A chunk's types (its metadata) and the readers of their values."""

    def __init__(self, types: dict[int, _Type]) -> None:
        self.types = types
        self.readers: dict[int, Reader] = {}
        self.by_name = {t.name: type_id for type_id, t in types.items()}

    def reader(self, type_id: int, depth: int = 0) -> Reader:
        found = self.readers.get(type_id)
        if found is None:
            found = self.readers[type_id] = self._make(type_id, depth)
        return found

    def _make(self, type_id: int, depth: int) -> Reader:
        if depth > MAX_NESTING:
            raise PayloadError(f"bad JFR recording: types nest deeper than {MAX_NESTING}")
        t = self.types.get(type_id)
        if t is None:
            raise PayloadError(f"bad JFR recording: a field of undeclared type {type_id}")
        if t.name == "java.lang.String":
            return _Input.string
        if t.name in PRIMITIVE_BYTES:
            return _Input.byte if PRIMITIVE_BYTES[t.name] == 1 else _Input.varint
        if t.name in FLOATS:
            number = FLOATS[t.name]
            return lambda inp: number.unpack(inp.take(number.size))[0]
        if t.name == CHUNK_HEADER_TYPE:
            return lambda inp: inp.take(HEADER.size)
        fields = [self._field(f, depth + 1) for f in t.fields]
        if all(read is _Input.varint for read in fields):
            n = len(fields)
            return lambda inp: inp.varints(n)
        return lambda inp: tuple(read(inp) for read in fields)

    def _field(self, f: _Field, depth: int) -> Reader:
        one = _Input.varint if f.pooled else self.reader(f.type_id, depth)
        if not f.array:
            return one
        return lambda inp: [one(inp) for _ in range(inp.items())]


@dataclass
class _Element:
    name: str
    attributes: dict[str, str]
    children: list[_Element]


def _element(inp: _Input, strings: list[str], depth: int = 0) -> _Element:
    if depth > MAX_NESTING:
        raise PayloadError(f"bad JFR recording: metadata nests deeper than {MAX_NESTING}")

    def text() -> str:
        index = inp.varint()
        if index >= len(strings):
            raise PayloadError(f"bad JFR recording: metadata string {index} is not in its table")
        return strings[index]

    name = text()
    attributes = {text(): text() for _ in range(inp.count())}
    children = [_element(inp, strings, depth + 1) for _ in range(inp.count())]
    return _Element(name, attributes, children)


def _metadata(inp: _Input) -> dict[int, _Type]:
    """The types a metadata event (its header read) declares, by id."""
    for _ in range(3):  # start time, duration, metadata id
        inp.varint()
    strings = [inp.string() or "" for _ in range(inp.count())]
    root = _element(inp, strings)
    types: dict[int, _Type] = {}
    for part in root.children:
        for cls in part.children if part.name == "metadata" else ():
            if cls.name == "class":
                types[_number(cls.attributes, "id")] = _Type(
                    cls.attributes.get("name", ""),
                    [
                        _Field(
                            f.attributes.get("name", ""),
                            _number(f.attributes, "class"),
                            f.attributes.get("constantPool") == "true",
                            f.attributes.get("dimension") == "1",
                        )
                        for f in cls.children
                        if f.name == "field"
                    ],
                )
    return types


def _number(attributes: dict[str, str], key: str) -> int:
    value = attributes.get(key, "")
    if not (value.isascii() and value.isdigit()):
        raise PayloadError(f"bad JFR recording: a metadata {key} of {value[:20]!r}")
    return int(value)


class _Chunk:
    """One chunk of a recording, read into `samples`."""

    def __init__(self, data: bytes, start: int, samples: _Samples) -> None:
        if len(data) - start < HEADER.size or data[start : start + 4] != MAGIC:
            raise PayloadError(f"not a JFR recording: no chunk header at byte {start}")
        _, major, _, size, _, meta, _, _, _, ticks, features = HEADER.unpack_from(data, start)
        if major != 2:
            raise PayloadError(f"bad JFR recording: chunk at byte {start}: version {major}, not 2")
        if not HEADER.size <= size <= len(data) - start:
            raise PayloadError(
                f"bad JFR recording: chunk at byte {start}: size {size} (the bytes left: "
                f"{len(data) - start}); the recording is cut short"
            )
        if not features & COMPRESSED_INTEGERS:
            raise PayloadError(
                f"JFR chunk at byte {start} has fixed-width integers: only varint ones "
                "(async-profiler's, the Pyroscope Java agent's) are read"
            )
        if not HEADER.size <= meta < size or ticks <= 0:
            raise PayloadError(f"bad JFR recording: chunk at byte {start}: bad header fields")
        self.data, self.start, self.end = data, start, start + size
        self.strings: dict[int, str] = {}  # the pool of java.lang.String, when it has one
        self.steps = [STEPS_PER_BYTE * size]
        self.ns_per_tick = 1e9 / ticks
        self.samples = samples
        self.pools: dict[int, dict[int, Any]] = {}

    def read(self) -> int:
        """Read the chunk; the byte after it."""
        try:
            self._read()
        # past the chunk's bytes, or a field of another kind than its event needs
        except (IndexError, struct.error, RecursionError, TypeError):
            raise PayloadError(
                f"bad JFR recording: the chunk at byte {self.start} is truncated or corrupt"
            ) from None
        return self.end

    def _input(self, pos: int, end: int = -1) -> _Input:
        return _Input(self.data, pos, self.end if end < 0 else end, self)

    def _read(self) -> None:
        events: list[tuple[int, int, int]] = []  # (type, fields start, event end)
        pos = self.start + HEADER.size
        while pos < self.end:
            inp = self._input(pos)
            size = inp.varint()
            kind = inp.varint()
            if size < 2 or size > self.end - pos:
                raise PayloadError(f"bad JFR recording: an event of {size} bytes at byte {pos}")
            events.append((kind, inp.pos, pos + size))
            pos += size
            self.samples.count_event()
        metadata = [e for e in events if e[0] == METADATA_EVENT]
        if not metadata:
            raise PayloadError(f"bad JFR recording: the chunk at byte {self.start} has no metadata")
        self.types = _Types(_metadata(self._input(metadata[-1][1])))
        for kind, at, end in events:
            if kind == CHECKPOINT_EVENT:
                self._checkpoint(self._input(at, end))
        self.samples.read(self, events)

    def _checkpoint(self, inp: _Input) -> None:
        for _ in range(3):  # start time, duration, delta to the previous checkpoint
            inp.varint()
        inp.byte()  # flush or type mask
        for _ in range(inp.count()):
            type_id = inp.varint()
            read = self.types.reader(type_id)
            pool = self.pools.setdefault(type_id, {})
            for _ in range(inp.count()):
                key = inp.varint()
                pool[key] = read(inp)
            if self.types.types[type_id].name == "java.lang.String":
                self.strings.update(pool)

    def event(self, kind: int, at: int, end: int) -> tuple:
        return self.types.reader(kind)(self._input(at, end))

    def pool(self, name: str) -> tuple[_Type, dict[int, Any]]:
        """The type called `name` and its pool (empty without one)."""
        type_id = self.types.by_name.get(name, -1)
        return self.types.types.get(type_id, _Type(name)), self.pools.get(type_id, {})


@dataclass
class _Event:
    """How to read one event type of a chunk: its fields' places (-1 when absent)."""

    kinds: tuple[tuple[str, str | None], ...]
    stack: int
    thread: int
    context: int
    state: int
    values: tuple[int, ...]
    cpu_state: tuple[str, bool] = ("", False)


class _Samples:
    """The push's samples as they are read chunk by chunk: rows per profile type and set
    of labels, over the push's frames and stacks."""

    def __init__(
        self, params: IngestParams, contexts: dict[int, tuple], budget: ingest.PushBudget
    ) -> None:
        self.params = params
        self.contexts = contexts
        self.budget = budget
        self.frames: list[Frame] = []
        self.frame_at: dict[str, int] = {}
        self.stacks: list[tuple[int, ...]] = []
        self.stack_at: dict[tuple[int, ...], int] = {}
        self.rows: dict[tuple[str, tuple], window_pprof.Rows] = {}
        self.events = 0

    def read(self, chunk: _Chunk, events: list[tuple[int, int, int]]) -> None:
        names = {type_id: t.name for type_id, t in chunk.types.types.items()}
        wall = self._wall(chunk, events, names)
        readers = _ChunkNames(chunk)
        plans: dict[int, _Event | None] = {}
        for kind, at, end in events:
            if kind not in plans:
                plans[kind] = _plan(chunk.types.types.get(kind), names.get(kind, ""), wall)
            plan = plans[kind]
            if plan is not None:
                self._add(plan, chunk.event(kind, at, end), readers, chunk.ns_per_tick)

    def _wall(self, chunk: _Chunk, events: list[tuple[int, int, int]], names: dict) -> bool:
        """Whether the recording's profiling event is wall-clock time (its setting
        `event` is `wall`): its execution samples are then wall samples too."""
        t = chunk.types.types.get(chunk.types.by_name.get(SETTING_EVENT, -1))
        if t is None:
            return False
        name_at, value_at = t.at("name"), t.at("value")
        for kind, at, end in events:
            if names.get(kind) == SETTING_EVENT and min(name_at, value_at) >= 0:
                values = chunk.event(kind, at, end)
                if values[name_at] == "event" and values[value_at] == "wall":
                    return True
        return False

    def _add(self, plan: _Event, values: tuple, names: _ChunkNames, ns_per_tick: float) -> None:
        stack = names.stack(values[plan.stack], self) if plan.stack >= 0 else None
        if stack is None:
            return  # no stack trace: nothing to show it under (Pyroscope drops it too)
        thread = names.thread(values[plan.thread]) if plan.thread >= 0 else None
        labels = self.contexts.get(values[plan.context], ()) if plan.context >= 0 else ()
        state = names.state(values[plan.state]) if plan.state >= 0 else ""
        on_cpu = (state == plan.cpu_state[0]) == plan.cpu_state[1]
        for (kind, _), at in zip(plan.kinds, plan.values, strict=True):
            if kind == "cpu" and not on_cpu:
                continue
            value = 1 if at < 0 else ingest.count(values[at], f"a JFR {kind} value")
            count = value if kind in RATED else 1
            weight = round(value * ns_per_tick) if kind in TIMED else value
            self._row(kind, labels).add(stack, thread, weight, count)

    def _row(self, kind: str, labels: tuple) -> window_pprof.Rows:
        rows = self.rows.get((kind, labels))
        if rows is None:
            meta = {"format": "jfr", "spy": self.params.spy_name}
            unit = "ns" if kind in TIMED else "samples"
            rows = self.rows[kind, labels] = window_pprof.Rows(unit, meta)
        return rows

    def count_event(self) -> None:
        self.events += 1
        if self.events > MAX_EVENTS:
            raise PayloadError(
                f"the JFR recording holds more than {MAX_EVENTS:,} events; send smaller "
                "pushes (a shorter PYROSCOPE_UPLOAD_INTERVAL)"
            )

    def frame(self, name: str) -> int:
        at = self.frame_at.get(name)
        if at is None:
            self.budget.create(1)
            at = self.frame_at[name] = len(self.frames)
            self.frames.append(window_pprof.named_frame(name))
        return at

    def stack(self, frames: tuple[int, ...]) -> int:
        """The index of a stack of frame indexes, leaf first."""
        at = self.stack_at.get(frames)
        if at is None:
            self.budget.spend(len(frames))
            at = self.stack_at[frames] = len(self.stack_at)
        return at

    def windows(self) -> list[Window]:
        params = self.params
        assert params.start is not None and params.end is not None  # pyroscope.decode() checks
        stacks = list(self.stack_at)
        return [
            Window(
                id=ingest.part_id(params.window_id, n),
                start=params.start,
                end=params.end,
                profile=rows.profile(self.frames, stacks),
                labels=ingest.labels(params.labels | dict(labels), "sample labels"),
                rate_hz=params.sample_rate if kind in RATED else 0.0,
                type=kind,
            )
            for n, ((kind, labels), rows) in enumerate(sorted(self.rows.items()))
        ]


def _plan(t: _Type | None, name: str, wall: bool) -> _Event | None:
    """How to read an event type, None when it is not one of EVENTS."""
    kinds = EVENTS.get(name)
    if t is None or kinds is None:
        return None
    if wall and name == "jdk.ExecutionSample":
        kinds = (("cpu", None), ("wall", None))
    thread = t.at("sampledThread") if t.at("eventThread") < 0 else t.at("eventThread")
    values = tuple(-1 if value is None else t.at(value) for _, value in kinds)
    fields = (t.at("stackTrace"), thread, t.at("contextId"), t.at("state"))
    return _Event(kinds, *fields, values, CPU_STATES.get(name, ("", False)))


class _ChunkNames:
    """A chunk's stack traces, threads and thread states from its constant pools, each
    resolved once."""

    def __init__(self, chunk: _Chunk) -> None:
        self.traces_type, self.traces = chunk.pool("jdk.types.StackTrace")
        self.frame_type, _ = chunk.pool("jdk.types.StackFrame")
        self.methods_type, self.methods = chunk.pool("jdk.types.Method")
        self.classes_type, self.classes = chunk.pool("java.lang.Class")
        self.symbols_type, self.symbols = chunk.pool("jdk.types.Symbol")
        self.threads_type, self.threads = chunk.pool("java.lang.Thread")
        self.states_type, self.states = chunk.pool("jdk.types.ThreadState")
        self.stacks: dict[int, int | None] = {}
        self.method_frames: dict[int, int | None] = {}
        self.thread_of: dict[int, Thread | None] = {}

    def stack(self, ref: int, samples: _Samples) -> int | None:
        if ref in self.stacks:
            return self.stacks[ref]
        trace = self.traces.get(ref)
        frames_at = self.traces_type.at("frames")
        method_at = self.frame_type.at("method")
        found = None
        if trace is not None and frames_at >= 0 and method_at >= 0:
            frames = trace[frames_at]
            if len(frames) > ingest.MAX_STACK_DEPTH:
                raise PayloadError(
                    f"a JFR stack trace is {len(frames)} frames deep; at most "
                    f"{ingest.MAX_STACK_DEPTH}"
                )
            ids = (self._method(f[method_at], samples) for f in frames)
            stack = tuple(i for i in ids if i is not None)
            found = samples.stack(stack) if stack else None
        self.stacks[ref] = found
        return found

    def _method(self, ref: int, samples: _Samples) -> int | None:
        if ref not in self.method_frames:
            method = self.methods.get(ref)
            name = None
            if method is not None:
                name = self._method_name(method)
            self.method_frames[ref] = None if name is None else samples.frame(name)
        return self.method_frames[ref]

    def _method_name(self, method: tuple) -> str | None:
        name = self._symbol(method, self.methods_type.at("name"))
        cls = self.classes.get(_field(method, self.methods_type.at("type")))
        owner = "" if cls is None else self._symbol(cls, self.classes_type.at("name"))
        for pattern, replacement in GENERATED:
            owner = pattern.sub(replacement, owner)
        full = f"{owner}.{name}" if owner else name
        return ingest.text(full, "a JFR method name") if full else None

    def _symbol(self, value: tuple, at: int) -> str:
        symbol = self.symbols.get(_field(value, at))
        text = _field(symbol, self.symbols_type.at("string")) if symbol is not None else None
        return text if isinstance(text, str) else ""

    def thread(self, ref: int) -> Thread | None:
        if ref not in self.thread_of:
            value = self.threads.get(ref)
            found = None
            if value is not None:
                t = self.threads_type
                tid = _field(value, t.at("osThreadId"))
                name = _field(value, t.at("javaName")) or _field(value, t.at("osName")) or ""
                tid = tid if isinstance(tid, int) and 0 < tid <= ingest.MAX_PID else 0
                name = ingest.text(name, "a JFR thread name", ingest.MAX_LABEL_VALUE)
                found = Thread(tid=tid, name=name)
            self.thread_of[ref] = found
        return self.thread_of[ref]

    def state(self, ref: int) -> str:
        value = self.states.get(ref)
        text = _field(value, self.states_type.at("name")) if value is not None else None
        return text if isinstance(text, str) else ""


def _field(value: tuple, at: int) -> Any:
    return value[at] if 0 <= at < len(value) else None


def _contexts(data: bytes) -> dict[int, tuple]:
    """The labels part: {context id: its labels as sorted (key, value) pairs}."""
    snapshot = LabelsSnapshot()
    try:
        snapshot.ParseFromString(data)
    except DecodeError as e:
        raise PayloadError(f"the labels part is truncated or not a LabelsSnapshot ({e})") from None
    strings = {
        key: ingest.text(text.decode("utf-8", "replace"), "a label")
        for key, text in snapshot.strings.items()
    }
    return {
        context: tuple(
            sorted((strings.get(k, ""), strings.get(v, "")) for k, v in c.labels.items())
        )
        for context, c in snapshot.contexts.items()
    }
