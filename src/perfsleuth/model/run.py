"""A run: its facts (RunInfo) and what a recorder hands over (Recording)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .profile import Profile

if TYPE_CHECKING:  # a count run's types: storing or reading a sampled run needs neither
    from .counts import Counts, ExactCounts
    from .cpu_cache import CacheProjections


@dataclass
class RunInfo:
    """What is known about a run besides its samples."""

    command: str = ""
    cwd: str = ""
    mode: str = "cpu"
    started: float = field(default_factory=time.time)
    duration_s: float | None = None
    exit_status: int | None = None
    host: str = ""
    cpu_model: str = ""
    kernel: str = ""
    git_rev: str = ""
    source: str = "record"
    dsos: list[dict] = field(default_factory=list)  # {"path", "build_id"}
    meta: dict = field(default_factory=dict)
    id: int = 0
    unit: str = ""
    total: float = 0.0
    samples: int = 0

    def recorded(self, recording: Recording) -> RunInfo:
        """These facts with what the recording measured (status, duration, DSOs, meta)."""
        return replace(
            self,
            mode=recording.mode or self.mode,
            exit_status=recording.exit_status,
            duration_s=recording.duration_s,
            dsos=list(recording.profile.dsos),
            meta={**self.meta, **recording.meta},
        )

    def summary(self) -> dict[str, Any]:
        """The `perfsleuth runs --format json` shape."""
        return {
            "id": str(self.id),
            "command": self.command,
            "mode": self.mode,
            "started": _iso(self.started),
            "duration_s": self.duration_s,
            "exit_status": self.exit_status,
        }


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass
class StoredDocument:
    """A document written with the run, in the same transaction."""

    kind: str
    name: str
    data: Any  # JSON, or a typed document (model/documents.py) the store dumps


@dataclass
class Recording:
    """What a recorder returns: a value, never an object mutated across layers.

    The command that started the recorder adds the facts it knows (command line,
    machine, working copy) and stores the two together.
    """

    profile: Profile
    mode: str | None = None  # the mode recorded, when the recorder fell back to another
    exit_status: int | None = None
    duration_s: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # recorder, freq, call_graph, ...
    documents: list[StoredDocument] = field(default_factory=list)


@dataclass
class LoadedRun:
    """A stored run as one value: its facts, its profile (with its timeline), its exact
    counts and its cache projections. The profile is read from the store when first
    asked for: views of a count run read the counts and never need it."""

    info: RunInfo
    read_profile: Callable[[], Profile] = field(repr=False)
    counts: Counts | None = None  # a count run's counts document
    cache: dict[str, CacheProjections] = field(default_factory=dict)  # name -> projections

    @cached_property
    def profile(self) -> Profile:
        return self.read_profile()

    @property
    def id(self) -> int:
        return self.info.id

    def exact(self, *, split_recursion: bool = False) -> ExactCounts | None:
        """A count run's exact counts, each recursion level (f'2) merged into its
        function unless `split_recursion`; None for other runs."""
        if self.counts is None:
            return None
        exact = self.counts.counts
        return exact if split_recursion else exact.merged_recursion()
