"""What a tracer saw of one function's calls (`TracedCalls`), and the counting both
tracers' readers share (`CallCounter`): the accesses of the first max_calls calls,
and totals over every call until the program stopped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..cpucache.trace import Access

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
    tracer: str = ""  # fntrace or lackey


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

    def start_call(self) -> None:
        rec = self.recording
        rec.total_calls += 1
        self.current = [] if len(rec.calls) < self.max_calls else None

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
