"""What a tracer saw of one function's calls (`TracedCalls`), and the counting both
tracers' readers share (`CallCounter`): the accesses of the first max_calls calls,
and totals over every call until the program stopped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..cpu_cache_projections import spatial_sample
from ..cpu_cache_projections.trace import Access

DataObserver = Callable[[int, int], None]  # (address, size) of each data access


@dataclass
class TracedCalls:
    """What one traced run saw of the function: the accesses of its first calls, and
    totals over every call until the program stopped."""

    calls: list[list[Access]]  # access records of the first max_calls calls
    total_calls: int = 0
    instructions: int = 0
    loads: int = 0  # L and M accesses, over all calls
    stores: int = 0  # S and M accesses
    data_lines: set[int] = field(default_factory=set)
    code_lines: set[int] = field(default_factory=set)
    exit_status: int | None = None
    duration_s: float = 0.0
    stopped_early: bool = False
    out_of_time: bool = False  # stopped by the time budget
    chosen: Literal["first", "fixed", "auto"] = "first"  # which calls were traced
    tracer: str = ""  # fntrace or lackey
    sample_every: int = 1  # 1 in k calls traced; the totals above cover those calls
    numbers: list[int] = field(default_factory=list)  # of the calls kept, when sampled
    # when sampled, every call's data accesses to the lines of the spatial sample
    # (cpu_cache_projections/spatial_sample.py), in the order they ran
    spatial: list[spatial_sample.Spatial] = field(default_factory=list)
    # the program's code mappings as (start, end, file offset, path), read from the
    # tracer's /proc/PID/maps while it ran (valgrind maps the guest's code in its own
    # address space): the library code a call ran is named through them
    objects: list[tuple[int, int, int, str]] = field(default_factory=list)


class CallCounter:
    """Counts the calls, instructions and data accesses a reader hands it, keeping
    the accesses of the first max_calls calls."""

    def __init__(
        self,
        max_calls: int,
        line_size: int,
        observer: DataObserver | None,
        stop_when_full: bool = True,
    ) -> None:
        self.max_calls = max_calls
        self.stop_when_full = stop_when_full
        self.shift = line_size.bit_length() - 1
        self.observer = observer
        self.recording = TracedCalls(calls=[])
        self.current: list[Access] | None = None
        self.pc, self.pc_size = 0, 0  # the last instruction inside the function

    def feed(self, chunk: bytes) -> bool:
        """A block of the tracer's output as read; True (with stop_when_full) once
        max_calls calls are complete."""
        raise NotImplementedError

    @property
    def full(self) -> bool:
        return len(self.recording.calls) >= self.max_calls

    def start_call(self, number: int | None = None, every: int = 1) -> None:
        """A call starts; a sampled one has its number among all calls, and the
        tool's k in force: a larger k than before leaves out the calls kept that
        are not its multiples."""
        rec = self.recording
        if number is None:
            rec.total_calls += 1
            self.current = [] if len(rec.calls) < self.max_calls else None
            return
        rec.total_calls = number + 1
        if every > rec.sample_every:
            kept = [(n, c) for n, c in zip(rec.numbers, rec.calls, strict=True) if n % every == 0]
            rec.numbers, rec.calls = [n for n, _ in kept], [c for _, c in kept]
            rec.spatial = spatial_sample.thinned(rec.spatial, self.shift, every)
            rec.sample_every = every
        rec.numbers.append(number)
        self.current = []

    def end_call(self) -> bool:
        """The call in progress returned; True once max_calls calls are complete."""
        if self.current is not None:
            self.recording.calls.append(self.current)
            self.current = None
        return self.full

    def count_instruction(self, address: int, size: int) -> None:
        self.pc, self.pc_size = address, size
        rec = self.recording
        rec.instructions += 1
        rec.code_lines.add(address >> self.shift)
        if self.current is not None:
            self.current.append(("I", address, size, address))

    def count_data(self, kind: str, address: int, size: int) -> None:
        rec = self.recording
        if kind != "S":
            rec.loads += 1
        if kind != "L":
            rec.stores += 1
        first, last = address >> self.shift, (address + size - 1) >> self.shift
        rec.data_lines.add(first)
        if last != first:
            rec.data_lines.add(last)
        if self.observer is not None:
            self.observer(address, size)
        if self.current is not None:
            self.current.append((kind, address, size, self.pc))
