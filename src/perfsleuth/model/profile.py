"""The Profile model: frames, stacks and aggregated samples, stored column-wise.

Every reader (perf.data, perf script, folded, pprof, callgrind, ...) produces a
Profile through ProfileBuilder; every view and analyzer reads one. Samples are
aggregated on the fly: one row per distinct (stack, thread, state), so memory
grows with the number of distinct stacks, never with the number of samples.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .leaf_costs import LeafCosts
from .timeline import Timeline

KERNEL_DSO = "[kernel.kallsyms]"
UNKNOWN = "[unknown]"  # the function or DSO of a frame nothing could name
PYTHON_DSO_PREFIX = "[python:"  # the DSO of a Python frame: [python:MODULE]

# Units a profile's weights can be in. "ns" is used for on-CPU clock events and
# off-CPU time alike, so the two can be added up.
UNITS = ("samples", "ns", "instructions", "events", "bytes", "accesses")
# Units of runs that count exactly (valgrind) instead of sampling: instructions of a count
# run, memory accesses of the calls a cache run traced.
EXACT_UNITS = ("instructions", "accesses")


@dataclass(frozen=True, slots=True)
class Frame:
    """One level of a call stack.

    `inlined` marks a frame that the compiler inlined into the next frame of the
    stack (its caller); both share one machine address. A frame without a symbol
    keeps where it is for a later look-up: the GNU `build_id` of its DSO and its
    `address` in that ELF (its own virtual address, as a symbol table gives it).
    """

    function: str
    dso: str = ""
    file: str = ""
    line: int = 0
    inlined: bool = False
    kernel: bool = False
    build_id: str = ""  # "" when the frame is symbolized or its ELF is unknown
    address: int = 0


@dataclass(frozen=True, slots=True)
class Thread:
    tid: int
    pid: int = 0
    name: str = ""


@dataclass
class Profile:
    """Aggregated samples. Stacks are tuples of frame ids, leaf first."""

    frames: list[Frame] = field(default_factory=list)
    stacks: list[tuple[int, ...]] = field(default_factory=list)
    # One entry per aggregated sample row, all columns the same length.
    sample_stack: list[int] = field(default_factory=list)
    sample_weight: list[float] = field(default_factory=list)
    sample_count: list[int] = field(default_factory=list)
    sample_thread: list[int] = field(default_factory=list)  # index into threads, -1 none
    sample_state: list[str] = field(default_factory=list)
    threads: list[Thread] = field(default_factory=list)
    unit: str = "samples"
    meta: dict = field(default_factory=dict)
    # The objects the frames were mapped from, when the reader knows them (pprof's
    # mappings): {"path", "build_id"}, kept with the run for symbols and analyses.
    dsos: list[dict] = field(default_factory=list)
    # The samples in the order they were taken, when the reader knows their times
    # (perf.data); the store keeps it as the run's "timeline" document.
    timeline: Timeline | None = None
    # The weight per leaf instruction address, when the reader sees sample addresses
    # (perf.data); the store keeps it as the run's "leaf_costs" document.
    leaf_costs: LeafCosts | None = None

    @property
    def total(self) -> float:
        return float(sum(self.sample_weight))

    @property
    def num_samples(self) -> int:
        return int(sum(self.sample_count))

    def columns(self) -> Iterator[tuple[int, float, int, int, str]]:
        """(stack id, weight, count, thread index, state) per aggregated row."""
        return zip(
            self.sample_stack,
            self.sample_weight,
            self.sample_count,
            self.sample_thread,
            self.sample_state,
            strict=True,
        )

    def rows(self) -> Iterator[tuple[tuple[int, ...], float, int, int, str]]:
        """(stack frame ids leaf-first, weight, count, thread index, state) per row."""
        stacks = self.stacks
        for sid, w, c, t, s in self.columns():
            yield stacks[sid], w, c, t, s

    def filtered(
        self,
        *,
        states: Iterable[str] | None = None,
        tids: Iterable[int] | None = None,
        without_stacks: Container[int] = (),
    ) -> Profile:
        """A copy keeping only samples in the given thread states and/or thread ids,
        and none whose stack id is in without_stacks."""
        keep_states = set(states) if states is not None else None
        keep_tids = set(tids) if tids is not None else None
        out = Profile(
            frames=self.frames,
            stacks=self.stacks,
            threads=self.threads,
            unit=self.unit,
            meta=dict(self.meta),
            dsos=self.dsos,
        )
        for sid, w, c, t, s in self.columns():
            if (keep_states is not None and s not in keep_states) or sid in without_stacks:
                continue
            if keep_tids is not None and (t < 0 or self.threads[t].tid not in keep_tids):
                continue
            out.sample_stack.append(sid)
            out.sample_weight.append(w)
            out.sample_count.append(c)
            out.sample_thread.append(t)
            out.sample_state.append(s)
        return out

    def without_inlines(self) -> Profile:
        """Inlined frames folded into their physical function, as `perf report` shows them."""
        builder = ProfileBuilder(unit=self.unit, meta=dict(self.meta))
        for stack, w, c, t, s in self.rows():
            frames = [self.frames[f] for f in stack if not self.frames[f].inlined]
            thread = self.threads[t] if t >= 0 else None
            builder.add(frames, w, count=c, thread=thread, state=s)
        return replace(builder.build(), dsos=self.dsos)


def _intern(ids: dict[Any, int], table: list[Any], value: Any) -> int:
    """The index of value in table, appending it the first time it is seen."""
    index = ids.get(value)
    if index is None:
        index = ids[value] = len(table)
        table.append(value)
    return index


class ProfileBuilder:
    """Interns frames and stacks and aggregates samples while a reader streams."""

    def __init__(self, unit: str = "samples", meta: dict | None = None) -> None:
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r}")
        self._frame_ids: dict[Frame, int] = {}
        self._stack_ids: dict[tuple[int, ...], int] = {}
        self._thread_ids: dict[Thread, int] = {}
        self._rows: dict[tuple[int, int, str], list] = {}
        self.profile = Profile(unit=unit, meta=meta or {})

    def frame_id(self, frame: Frame) -> int:
        return _intern(self._frame_ids, self.profile.frames, frame)

    def stack_id(self, frame_ids: tuple[int, ...]) -> int:
        return _intern(self._stack_ids, self.profile.stacks, frame_ids)

    def thread_id(self, thread: Thread | None) -> int:
        if thread is None:
            return -1
        return _intern(self._thread_ids, self.profile.threads, thread)

    def add(
        self,
        frames: Sequence[Frame],
        weight: float,
        *,
        count: int = 1,
        thread: Thread | None = None,
        state: str = "",
    ) -> None:
        """Add a sample whose stack is given leaf first."""
        stack = tuple(self.frame_id(f) for f in frames)
        self.add_ids(stack, weight, count=count, thread_index=self.thread_id(thread), state=state)

    def add_ids(
        self,
        stack: tuple[int, ...],
        weight: float,
        *,
        count: int = 1,
        thread_index: int = -1,
        state: str = "",
    ) -> None:
        """Add a sample whose frames were already interned with frame_id()."""
        self.add_to_stack(
            self.stack_id(stack), weight, count=count, thread_index=thread_index, state=state
        )

    def add_to_stack(
        self,
        stack_id: int,
        weight: float,
        *,
        count: int = 1,
        thread_index: int = -1,
        state: str = "",
    ) -> None:
        """Add a sample whose stack was already interned with stack_id()."""
        key = (stack_id, thread_index, state)
        row = self._rows.get(key)
        if row is None:
            self._rows[key] = [weight, count]
        else:
            row[0] += weight
            row[1] += count

    def build(self) -> Profile:
        p = self.profile
        for (sid, t, s), (w, c) in self._rows.items():
            p.sample_stack.append(sid)
            p.sample_weight.append(w)
            p.sample_count.append(c)
            p.sample_thread.append(t)
            p.sample_state.append(s)
        self._rows = {}
        return p


def merge(profiles: Sequence[Profile]) -> Profile:
    """One profile with the samples of all; units must agree."""
    units = {p.unit for p in profiles}
    if len(units) > 1:
        raise ValueError(f"cannot merge profiles with different units: {sorted(units)}")
    builder = ProfileBuilder(unit=units.pop() if units else "samples")
    for p in profiles:
        for stack, w, c, t, s in p.rows():
            frames = [p.frames[f] for f in stack]
            builder.add(frames, w, count=c, thread=p.threads[t] if t >= 0 else None, state=s)
    return builder.build()


def is_python_frame(frame: Frame) -> bool:
    return frame.dso.startswith(PYTHON_DSO_PREFIX)
