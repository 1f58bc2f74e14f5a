"""Fleet mode's unit of data: a window of samples from one source, with labels.

An agent sends one Window per host every few seconds; a Pyroscope, OTLP or pprof
push becomes one Window too. The fleet store keeps every sample with the labels of
LABELS (empty when unknown) plus the window's own labels (service version,
environment, ...), so fleet queries can filter and group by any of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from .labels import LABEL_GROUPINGS as LABEL_GROUPINGS
from .labels import LABEL_NAME as LABEL_NAME
from .labels import LABEL_PREFIX as LABEL_PREFIX
from .labels import LABELS as LABELS

if TYPE_CHECKING:
    from .profile import Profile


# The profile types a window can hold, each with the unit of its values. CPU time is
# what fleet queries read unless told otherwise (--type).
PROFILE_TYPES = {
    "cpu": "ns",
    "wall": "ns",
    "alloc_objects": "count",
    "alloc_space": "bytes",
    "inuse_objects": "count",
    "inuse_space": "bytes",
    "mutex_contentions": "count",
    "mutex_delay": "ns",
    "block_contentions": "count",
    "block_delay": "ns",
    "goroutines": "count",
}
DEFAULT_TYPE = "cpu"


class FleetHost(TypedDict):
    """A host of `fleet status`: its recent windows and what its agent last reported."""

    host: str
    last_push: float | None  # unix seconds
    windows: int
    samples: int
    metrics: dict[str, Any]  # the agent's last status (lost samples, its CPU and memory...)
    samples_per_s: float
    windows_dropped: Any  # of `metrics`, None when not reported
    lost_samples: Any


class StoreCost(TypedDict):
    """What the fleet store costs in objects and requests, and what compaction saves."""

    objects: int
    objects_after_compaction: int
    query_objects: int
    query_objects_after_compaction: int
    windows_last_hour: int
    requests_per_hour: int


class FleetStatus(TypedDict):
    """`fleet status`: what the store holds and what each host last said."""

    store: str
    bytes: int
    files: int
    oldest: float | None  # unix start of the oldest hour holding data
    newest: float | None
    windows_recent: int
    hosts: list[FleetHost]
    cost: StoreCost


# A window id names files in the store: it must be safe as a file name.
WINDOW_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True)
class Process:
    """What is known of a sampled process beyond its pid and comm."""

    exe: str = ""
    build_id: str = ""
    cgroup: str = ""
    # Paths of the shared libraries it has mapped (/proc/PID/maps), for `fleet libraries`.
    libraries: tuple[str, ...] = field(default=(), kw_only=True)


@dataclass
class Window:
    """Samples of one source over [start, end) (unix seconds).

    `profile` holds the samples; each sample's thread gives its pid, tid and comm.
    `processes` adds exe, build-id and cgroup per pid. `labels` apply to every
    sample (host, service and any user label). `rate_hz` is the sampling rate, so
    counts from sources sampling at different rates turn into comparable CPU time;
    0 when the profile's weights are already the values (nanoseconds, bytes, ...).
    `type` is the profile type (PROFILE_TYPES), whose unit the values are in.
    """

    id: str
    start: float
    end: float
    profile: Profile
    labels: dict[str, str] = field(default_factory=dict)
    processes: dict[int, Process] = field(default_factory=dict)
    rate_hz: float = 0.0
    type: str = DEFAULT_TYPE

    def __post_init__(self) -> None:
        if self.type not in PROFILE_TYPES:
            raise ValueError(f"unknown profile type {self.type[:40]!r}")
        if not WINDOW_ID.fullmatch(self.id):
            raise ValueError(f"bad window id {self.id[:40]!r}: use letters, digits, . _ -")
        if not self.end >= self.start:
            raise ValueError("a window must end after it starts")

    @property
    def unit(self) -> str:
        return PROFILE_TYPES[self.type]

    def cpu_ns(self, weight: float, count: int) -> float:
        """The value a sample row stands for: CPU time for a CPU profile, else the
        type's own value (wall ns, bytes, objects, ...)."""
        if self.rate_hz > 0:
            return count * 1e9 / self.rate_hz
        return weight
