"""A traced function's calls and their accesses with source lines, in the form the
projections use (collect/cache_trace.py makes one from a memory trace)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

PAGE_SIZE = 4096
# (kind, address, size, pc): kind I (instruction), L (load), S (store), M (modify).
Access = tuple[str, int, int, int]


@dataclass
class Trace:
    """What one recording says about one function (addresses are runtime ones)."""

    function: str
    executable: str
    base: int
    line_size: int
    calls: list[list[Access]]
    total_calls: int
    instructions: int
    loads: int
    stores: int
    data_lines: int  # distinct, over every call
    code_lines: int
    sources: dict[int, str] = field(default_factory=dict)  # pc -> "file:line"
    data_pages: int = 0  # distinct 4 KiB pages, over every call
    sample_every: int = 1  # 1 in k calls traced; the totals above cover those
    out_of_time: bool = False  # the program was stopped by the time budget
    chosen: Literal["first", "fixed", "auto"] = "first"  # how the calls were chosen
    # sampled: every call's (address, size) data accesses to the lines of the
    # spatial sample at 1 in sample_every (spatial_sample.py); empty otherwise
    spatial: list[tuple[int, int]] = field(default_factory=list)

    def source_of(self, pc: int) -> str:
        return self.sources.get(pc, "")
