"""Analyzers: one module each, `analyze(ctx: Context) -> list[Finding]`.

Analyzers read the profile and the program (binaries, debug info, source); they
never run the recorders and never print. Ranking is rank.py's job, not theirs.
Every module in this package that defines `analyze` is run by the advisor, in the order
discover() gives (those that compile hot units, READS_UNITS, last).
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.counts import ExactCounts
from ..model.cpu_cache import CacheProjections
from ..model.findings import Finding
from ..model.profile import Profile
from ..model.run import RunInfo
from ..rules import Rule
from ..static_analysis.cpu_limits import DEEP_BUDGET, DEEP_TUS, cpu_seconds

if TYPE_CHECKING:
    from ..static_analysis.source import HotCode


@dataclass
class AnalyzerOptions:
    """The analyzers' and verifiers' knobs, as the commands set them."""

    rules: list[Rule] | None = None  # None: the built-in rules
    show_all: bool = False
    build: str | None = None  # shell command that rebuilds the program into $OUT (--verify)
    deep_tus: int = DEEP_TUS  # translation units the aliasing analysis compiles
    deep_budget: float | None = DEEP_BUDGET  # CPU seconds for them; None: no bound
    verify_runs: int = 10
    verify_warmup: int = 1


@dataclass
class Context:
    profile: Profile
    run: RunInfo
    counts: ExactCounts | None = None  # a count run's exact counts, recursion merged
    cache: dict[str, CacheProjections] = field(default_factory=dict)  # traced functions
    src_roots: list[Path] = field(default_factory=list)  # --src, else from DW_AT_comp_dir
    compile_commands: Path | None = None
    binaries: list[dict] = field(default_factory=list)  # {"path", "build_id"} of the run's DSOs
    options: AnalyzerOptions = field(default_factory=AnalyzerOptions)
    notes: list[str] = field(default_factory=list)  # things the user should know, not findings
    # CPU seconds each deeply analysed unit cost, shared by the analyzers reading them
    deep_spent: dict[str, float] = field(default_factory=dict)
    # when the analysis began, on cpu_seconds()'s clock: what the budget counts from
    started_cpu: float = field(default_factory=cpu_seconds)

    @cached_property
    def hot_code(self) -> HotCode:
        """The profile's self weight by source line and file, made once for the
        analyzers that read hot units (each made its own: 2 x 0.6 CPU-s on speedtest1)."""
        from ..static_analysis.source import hot_code

        return hot_code(self.profile)


Analyzer = Callable[[Context], list[Finding]]


def discover() -> dict[str, Analyzer]:
    """name -> analyze function, for every analyzer module in this package, by name; the
    modules that read hot units deeply (READS_UNITS) last. Those stop at the analysis's
    CPU budget, counted from its start: run after the others, they get what the others
    left of it, and the whole analysis keeps to the budget. Run first (by name,
    aliasing_write was), the 5.4 CPU-s of the others on speedtest1's count run came on
    top of the budget's 10 (16 CPU-s in all)."""
    found: dict[tuple[bool, str], Analyzer] = {}
    for info in pkgutil.iter_modules(__path__):
        module = import_module(f"{__name__}.{info.name}")
        analyze = getattr(module, "analyze", None)
        if callable(analyze):
            found[getattr(module, "READS_UNITS", False), info.name] = analyze
    return {name: analyze for (_deep, name), analyze in sorted(found.items())}
