"""pprof profile.proto (plain or gzipped): the reader (present/pprof.py writes it).

Each Location becomes one or more Frames: its Line entries are listed innermost
first, so every line but the last is a frame inlined into the next one.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from google.protobuf.message import DecodeError

from perfsleuth.errors import UserError
from perfsleuth.formats import limits
from perfsleuth.formats import profile_pb2 as pb
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread
from perfsleuth.model.states import STATES

# Source line numbers beyond this do not fit the run store's INTEGER column.
MAX_LINE_NUMBER = 2**31 - 1
CPU = ("cpu", "nanoseconds")
SAMPLES = ("samples", "count")
# Scale from a pprof unit to a perfsleuth unit.
UNIT_SCALE = {
    "nanoseconds": ("ns", 1.0),
    "microseconds": ("ns", 1e3),
    "milliseconds": ("ns", 1e6),
    "seconds": ("ns", 1e9),
    "bytes": ("bytes", 1.0),
}


# Wire type of each top-level field of Profile: 0 = varint, 2 = length-delimited.
FIELD_WIRE_TYPES = {n: 2 for n in (1, 2, 3, 4, 5, 6, 11, 13, 16)} | {
    n: 0 for n in (7, 8, 9, 10, 12, 14, 15)
}


def sniff(head: bytes) -> bool:
    """True when `head` (already gunzipped) parses as the top-level fields of a Profile.

    The head may be cut anywhere, so only the fields it holds in full are checked.
    """
    pos, fields = 0, 0
    while pos < len(head):
        tag, pos = _varint(head, pos)
        if tag < 0:
            break
        field, wire = tag >> 3, tag & 7
        expected = FIELD_WIRE_TYPES.get(field)
        if expected is None or wire not in (expected, 0 if field == 13 else expected):
            return False
        value, pos = _varint(head, pos)
        if value < 0:
            break
        if wire == 2:
            pos += value
        fields += 1
    return fields >= 2


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position), or (-1, pos) when the data ends inside the varint."""
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            return -1, pos
    return -1, pos


def read(path: str | Path, *, max_bytes: int | None = None) -> Profile:
    """The profile at `path`; more than `max_bytes` (default limits.max_input_bytes())
    on disk or decompressed is refused."""
    name = Path(path).name
    data = limits.read_bytes(Path(path), max_bytes or limits.max_input_bytes())
    try:
        msg = pb.Profile.FromString(data)
    except DecodeError as e:
        raise UserError(f"{name}: not a valid pprof profile ({e}); the file is corrupt") from e
    return _Reader(msg, name).profile()


class _Reader:
    """Checks every index of one decoded Profile while turning it into a perfsleuth one."""

    def __init__(self, msg: pb.Profile, name: str) -> None:
        self.msg = msg
        self.name = name
        self.strings = list(msg.string_table)
        if self.strings and self.strings[0] != "":
            self._corrupt('string_table[0] must be ""')
        self.functions = self._by_id(msg.function, "function")
        self.mappings = self._by_id(msg.mapping, "mapping")
        self.locations = self._by_id(msg.location, "location")
        self.tally = limits.Tally(name)
        self._frames: dict[int, tuple[Frame, ...]] = {}

    def _by_id(self, items, kind: str) -> dict:
        """Items by id; id 0 and a repeated id are corrupt (pprof ids are unique, non-zero)."""
        table: dict = {}
        for item in items:
            if item.id == 0:
                self._corrupt(f"a {kind} has id 0")
            if item.id in table:
                self._corrupt(f"{kind} id {item.id} is used twice")
            table[item.id] = item
        return table

    def _corrupt(self, what: str) -> NoReturn:
        raise UserError(f"{self.name}: {what}; the file is corrupt")

    def string(self, index: int, owner: str) -> str:
        if not 0 <= index < len(self.strings):
            self._corrupt(f"{owner} refers to string {index} which does not exist")
        return self.strings[index]

    def profile(self) -> Profile:
        types = [
            (self.string(t.type, "sample_type"), self.string(t.unit, "sample_type"))
            for t in self.msg.sample_type
        ]
        if not types:
            raise UserError(f"{self.name}: the profile has no sample_type; nothing to read")
        pick = _pick_type(types, self.string(self.msg.default_sample_type, "default_sample_type"))
        unit, scale = _unit_of(types[pick])
        count_index = types.index(SAMPLES) if SAMPLES in types else -1
        builder = ProfileBuilder(unit=unit, meta=self._meta(types[pick]))
        for i, sample in enumerate(self.msg.sample):
            if len(sample.value) != len(types):
                self._corrupt(f"sample {i} has {len(sample.value)} values for {len(types)} types")
            values = [limits.checked(v, f"{self.name}: sample {i} value") for v in sample.value]
            count = int(values[count_index]) if count_index >= 0 else 1
            self.tally.add(count, f"{self.name}: sample {i}")
            thread, state = self._labels(sample, i)
            builder.add(
                self._stack(sample, i),
                values[pick] * scale,
                count=count,
                thread=thread,
                state=state,
            )
        return builder.build()

    def _meta(self, picked: tuple[str, str]) -> dict:
        m = self.msg
        meta: dict = {"format": "pprof", "sample_type": "/".join(picked)}
        if m.period:
            meta["period"] = m.period
            period_type = (
                self.string(m.period_type.type, "period_type"),
                self.string(m.period_type.unit, "period_type"),
            )
            meta["period_type"] = "/".join(period_type)
        if m.duration_nanos:
            meta["duration_ns"] = m.duration_nanos
        if m.time_nanos:
            meta["time_ns"] = m.time_nanos
        comments = [self.string(c, "comment") for c in m.comment]
        if comments:
            meta["comments"] = comments
        return meta

    def _stack(self, sample: pb.Sample, index: int) -> list[Frame]:
        frames: list[Frame] = []
        if len(sample.location_id) > limits.MAX_DEPTH:
            self._corrupt(f"sample {index} is deeper than {limits.MAX_DEPTH} locations")
        for lid in sample.location_id:
            if lid not in self.locations:
                self._corrupt(f"sample {index} refers to location {lid} which does not exist")
            frames.extend(self._location_frames(lid))
        return frames

    def _location_frames(self, lid: int) -> tuple[Frame, ...]:
        cached = self._frames.get(lid)
        if cached is None:
            cached = self._frames[lid] = self._decode_location(self.locations[lid])
        return cached

    def _decode_location(self, loc: pb.Location) -> tuple[Frame, ...]:
        dso = ""
        if loc.mapping_id:
            mapping = self.mappings.get(loc.mapping_id)
            if mapping is None:
                self._corrupt(
                    f"location {loc.id} refers to mapping {loc.mapping_id} which does not exist"
                )
            dso = self.string(mapping.filename, f"mapping {mapping.id}")
        kernel = dso.startswith("[kernel")
        if not loc.line:
            return (Frame(f"0x{loc.address:x}", dso=dso, kernel=kernel),)
        last = len(loc.line) - 1
        return tuple(
            self._line_frame(loc.id, line, dso, kernel, inlined=i < last)
            for i, line in enumerate(loc.line)
        )

    def _line_frame(
        self, lid: int, line: pb.Line, dso: str, kernel: bool, *, inlined: bool
    ) -> Frame:
        fn = self.functions.get(line.function_id)
        if fn is None:
            self._corrupt(
                f"location {lid} refers to function {line.function_id} which does not exist"
            )
        owner = f"function {fn.id}"
        if not 0 <= line.line <= MAX_LINE_NUMBER:
            self._corrupt(f"location {lid} has line number {line.line}")
        return Frame(
            function=self.string(fn.name, owner) or self.string(fn.system_name, owner),
            dso=dso,
            file=self.string(fn.filename, owner),
            line=line.line,
            inlined=inlined,
            kernel=kernel,
        )

    def _labels(self, sample: pb.Sample, index: int) -> tuple[Thread | None, str]:
        owner = f"sample {index} label"
        strs: dict[str, str] = {}
        nums: dict[str, int] = {}
        for label in sample.label:
            key = self.string(label.key, owner)
            if label.str:
                strs[key] = self.string(label.str, owner)
            else:
                nums[key] = label.num
        state = strs.get("state", "")
        if state and state not in STATES:
            state = "other"
        if "tid" not in nums and "thread" not in strs:
            return None, state
        thread = Thread(tid=nums.get("tid", 0), pid=nums.get("pid", 0), name=strs.get("thread", ""))
        return thread, state


def _pick_type(types: list[tuple[str, str]], default: str) -> int:
    """cpu/nanoseconds, else the profile's default type, else samples/count, else the last."""
    names = [t for t, _ in types]
    if CPU in types:
        return types.index(CPU)
    if default in names:
        return names.index(default)
    return types.index(SAMPLES) if SAMPLES in types else len(types) - 1


def _unit_of(value_type: tuple[str, str]) -> tuple[str, float]:
    kind, unit = value_type
    if unit in UNIT_SCALE:
        return UNIT_SCALE[unit]
    if kind == "instructions":
        return "instructions", 1.0
    return ("samples" if kind == "samples" else "events"), 1.0
