"""The Finding: what an analyzer reports (schema in docs/findings.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Every kind of finding, in one place. Add kinds here as analyzers arrive.
KINDS = (
    "allocator",
    "library-replacement",
    "runtime-tuning",
    "build-flags",
    "hot-library",
    "missing-symbols",
    "lock-contention",
    "off-cpu",
    "aliasing-write",
    "missed-vectorization",
    "vector-bool",
    "exceptions-control-flow",
    "prologue-overhead",
    "cache-layout",
    "cache-footprint",
    "constant-time",
    "python-json",
    "python-library",
    "python-interpreter",
    "python-vectorize",
    "cost-class",
    "note",
)


@dataclass
class Finding:
    rule: str
    kind: str
    title: str
    share: float  # fraction of the run's weight the finding's code accounts for
    estimated_gain: float  # fraction of total run time a fix is expected to save
    confidence: float
    suggestion: str
    function: str = ""
    dso: str = ""
    file: str = ""
    line: int = 0
    evidence: list[str] = field(default_factory=list)
    fix: dict[str, Any] = field(default_factory=dict)
    verified: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)  # analyzer-specific extras
    # the estimate as a range of the run, and where its figure comes from (a measurement,
    # the calibration set, a published comparison); 0/0/"" when the analyzer gives none
    gain_low: float = 0.0
    gain_high: float = 0.0
    gain_basis: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r}; add it to findings.KINDS")

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        if doc["verified"] is None:
            del doc["verified"]
        if not doc["details"]:
            del doc["details"]
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Finding:
        return cls(**doc)
