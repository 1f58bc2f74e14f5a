"""pprof profile.proto, gzipped, for `go tool pprof` and the tools that read it.

Inlined frames join their caller's Location as extra Line entries, innermost first,
as formats/pprof.py reads them back. Values are int64: fractional weights (folded
inputs, callgrind's split costs) are rounded so the running total stays exact, so a
total of 334.6 is written as 335 over the stacks, never as their rounded sum.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from . import PROFILE, Output, TitledProfile

if TYPE_CHECKING:  # types alone: the registry imports this module for every command's --format
    from ..formats import profile_pb2 as pb
    from ..model.profile import Profile

# What the writer calls each perfsleuth unit.
WRITE_TYPES = {
    "ns": ("cpu", "nanoseconds"),
    "samples": ("samples", "count"),
    "instructions": ("instructions", "count"),
    "accesses": ("accesses", "count"),
    "events": ("events", "count"),
    "bytes": ("space", "bytes"),
}


def encode(profile: Profile) -> bytes:
    """`profile` as a gzipped profile.proto."""
    # profile_pb2 takes a tenth of a second to import and the registry imports this
    # module for every command's --format choices: it is loaded only to write.
    import gzip

    from ..formats import profile_pb2

    msg = _Writer(profile, profile_pb2.Profile()).message()
    return gzip.compress(msg.SerializeToString())


class _Writer:
    def __init__(self, profile: Profile, empty: pb.Profile) -> None:
        from ..formats.pprof_message import ProfileMessage

        self.p = profile
        self.msg = empty
        self.interned = ProfileMessage(profile, empty, program_first=True)
        self.intern = self.interned.intern

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
            location_ids = self.interned.location_ids(stack)
            sample = m.sample.add(location_id=location_ids, value=values)
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


def _write(doc: TitledProfile, fh: IO[Any]) -> None:
    fh.write(encode(doc.profile))


OUTPUT = Output(
    name="pprof",
    help="gzipped profile.proto for `go tool pprof`",
    writers={PROFILE: _write},
    binary=True,
)
