"""pprof profile.proto, gzipped, for `go tool pprof` and the tools that read it.

Inlined frames join their caller's Location as extra Line entries, innermost first,
as formats/pprof.py reads them back. Values are int64: fractional weights (folded
inputs, callgrind's split costs) are rounded so the running total stays exact, so a
total of 334.6 is written as 335 over the stacks, never as their rounded sum.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

from ..model.profile import Frame, Profile
from . import PROFILE, Output, TitledProfile

if TYPE_CHECKING:
    from ..formats import profile_pb2 as pb

# What the writer calls each perfsleuth unit.
WRITE_TYPES = {
    "ns": ("cpu", "nanoseconds"),
    "samples": ("samples", "count"),
    "instructions": ("instructions", "count"),
    "events": ("events", "count"),
    "bytes": ("space", "bytes"),
}


def encode(profile: Profile) -> bytes:
    """`profile` as a gzipped profile.proto."""
    # profile_pb2 takes a tenth of a second to import and the registry imports this
    # module for every command's --format choices: it is loaded only to write.
    from ..formats import profile_pb2

    msg = _Writer(profile, profile_pb2.Profile()).message()
    return gzip.compress(msg.SerializeToString())


class _Writer:
    def __init__(self, profile: Profile, empty: pb.Profile) -> None:
        self.p = profile
        self.msg = empty
        self._strings: dict[str, int] = {}
        self._functions: dict[tuple[str, str], int] = {}
        self._mappings: dict[str, int] = {}
        self._locations: dict[tuple[int, ...], int] = {}
        self.intern("")

    def intern(self, s: str) -> int:
        index = self._strings.get(s)
        if index is None:
            index = self._strings[s] = len(self.msg.string_table)
            self.msg.string_table.append(s)
        return index

    def message(self) -> pb.Profile:
        p, m = self.p, self.msg
        weight_type = WRITE_TYPES[p.unit]
        types = [weight_type] if p.unit == "samples" else [WRITE_TYPES["samples"], weight_type]
        for kind, unit in types:
            m.sample_type.add(type=self.intern(kind), unit=self.intern(unit))
        m.default_sample_type = self.intern(weight_type[0])
        self._write_meta(weight_type)
        written = exact = 0.0
        for stack, weight, count, tid, state in p.rows():
            # pprof values are int64: round the running total, not each weight, so
            # the total and every stack's share stay within one unit of the run's
            exact += weight
            value = round(exact - written)
            written += value
            values = [value] if p.unit == "samples" else [count, value]
            sample = m.sample.add(location_id=self._location_ids(stack), value=values)
            self._write_labels(sample, tid, state)
        return m

    def _write_meta(self, weight_type: tuple[str, str]) -> None:
        meta, m = self.p.meta, self.msg
        if "period" in meta:
            m.period = int(meta["period"])
            m.period_type.type = self.intern(weight_type[0])
            m.period_type.unit = self.intern(weight_type[1])
        if "duration_ns" in meta:
            m.duration_nanos = int(meta["duration_ns"])
        elif "duration_s" in meta:
            m.duration_nanos = int(float(meta["duration_s"]) * 1e9)
        if "time_ns" in meta:
            m.time_nanos = int(meta["time_ns"])

    def _write_labels(self, sample: pb.Sample, tid: int, state: str) -> None:
        if tid >= 0:
            thread = self.p.threads[tid]
            sample.label.add(key=self.intern("tid"), num=thread.tid)
            if thread.pid:
                sample.label.add(key=self.intern("pid"), num=thread.pid)
            if thread.name:
                sample.label.add(key=self.intern("thread"), str=self.intern(thread.name))
        if state:
            sample.label.add(key=self.intern("state"), str=self.intern(state))

    def _location_ids(self, stack: Sequence[int]) -> list[int]:
        """Group leaf-first frame ids into locations: inlined frames join their caller."""
        ids: list[int] = []
        group: list[int] = []
        for fid in stack:
            group.append(fid)
            if not self.p.frames[fid].inlined:
                ids.append(self._location_id(tuple(group)))
                group = []
        if group:
            ids.append(self._location_id(tuple(group)))
        return ids

    def _location_id(self, group: tuple[int, ...]) -> int:
        return _intern(self._locations, group, lambda: self._add_location(group))

    def _add_location(self, group: tuple[int, ...]) -> int:
        frames = [self.p.frames[f] for f in group]
        loc = self.msg.location.add(id=len(self.msg.location) + 1)
        loc.mapping_id = self._mapping_id(frames[-1].dso)
        for f in frames:
            loc.line.add(function_id=self._function_id(f), line=f.line)
        return loc.id

    def _function_id(self, frame: Frame) -> int:
        key = (frame.function, frame.file)
        return _intern(self._functions, key, lambda: self._add_function(frame))

    def _add_function(self, frame: Frame) -> int:
        fn = self.msg.function.add(id=len(self.msg.function) + 1)
        fn.name = fn.system_name = self.intern(frame.function)
        fn.filename = self.intern(frame.file)
        return fn.id

    def _mapping_id(self, dso: str) -> int:
        if not dso:
            return 0
        return _intern(self._mappings, dso, lambda: self._add_mapping(dso))

    def _add_mapping(self, dso: str) -> int:
        mapping = self.msg.mapping.add(id=len(self.msg.mapping) + 1, filename=self.intern(dso))
        mapping.has_functions = mapping.has_filenames = mapping.has_line_numbers = True
        mapping.has_inline_frames = True
        return mapping.id


def _intern(table: dict, key: object, make: Callable[[], int]) -> int:
    value = table.get(key)
    if value is None:
        value = table[key] = make()
    return value


def _write(doc: TitledProfile, fh: IO[Any]) -> None:
    fh.write(encode(doc.profile))


OUTPUT = Output(
    name="pprof",
    help="gzipped profile.proto for `go tool pprof`",
    writers={PROFILE: _write},
    binary=True,
)
