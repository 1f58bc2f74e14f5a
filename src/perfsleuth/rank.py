"""Estimated gain and ordering of findings: the one place ranking is decided.

A finding's gain is what fixing it would save as a fraction of the run: the
measured gain when an experiment verified it (1 - 1/speed-up), else the
analyzer's estimate, never more than the finding's share. Findings that say the
profile itself is unreliable (missing symbols) come first when what they hide is
large; the rest by gain, then confidence. Findings below the noise floor are hidden unless asked
(not those made of exact instruction counts), and so are those a sampled run supports with too
few samples to tell them from chance.

`advice()` makes the one document every output and the web UI show: the order, what is
shown and what is hidden (and why), and each finding's effective gain. Nothing else sorts
or filters findings: the server ranks stored findings with it, the outputs only draw it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, cast

from .model.findings import Finding
from .views import documents

NOISE_FLOOR = 0.005  # hide findings that would save less than 0.5% of the run
DIAGNOSTIC_KINDS = ("missing-symbols", "constant-time")  # shown whatever their gain
# Estimated from exact instruction counts (count mode), which have no noise: their
# analyzer's own floor decides (0.05% of the run). A planted 0.46% regression of SQLite's
# pcache1Fetch (a NOINLINE removed) was found and hidden as "less than 0.5% of the run".
EXACT_KINDS = ("prologue-overhead",)
DIAGNOSTIC_FIRST_SHARE = 0.2  # above this the profile is too blind to trust: say so first
DIAGNOSTIC_MIN_SHARE = 0.05


# A sampled finding needs this many samples behind its share: from 12 up, the low end of
# the count's exact 95% Poisson interval (6.2 at 12) is at least half of it, so the finding's
# share is at least half what it says; at 2 samples it could be a tenth. The advisor writes
# the count into details[SUPPORT] of a sampled run.
SUPPORT = "supporting_samples"
MIN_SUPPORT = 12
FEW_RUN_SAMPLES = 200  # a run this short gets a note that its shares are rough


HIDDEN_BY_VERDICT = "its A/B experiment measured no difference"
HIDDEN_BY_NOISE = f"it would save less than {100 * NOISE_FLOOR:g}% of the run"
HIDDEN_BY_FEW_SAMPLES = "it rests on too few samples"


@dataclass
class Ranked:
    shown: list[Finding]
    hidden: list[Finding]


@dataclass
class Placed:
    """A finding where the ranking put it, with the gain the order used."""

    finding: Finding
    gain: float
    measured: bool  # the gain is an A/B experiment's, not the analyzer's estimate
    hidden_because: str = ""  # empty when shown

    def to_json(self) -> documents.PlacedFinding:
        doc = {**self.finding.to_json(), "gain": self.gain, "gain_measured": self.measured}
        if self.hidden_because:
            doc["hidden_because"] = self.hidden_because
        return cast(documents.PlacedFinding, doc)  # the Finding's keys, then these


@dataclass
class Advice:
    """The ranked findings of a run: `findings` in the order to fix them, `hidden_findings`
    with the reason each is left out, `hidden` their count. Each finding's JSON is the
    Finding's (every field it has) plus `gain` and `gain_measured`."""

    KIND: ClassVar[str] = "advice"
    VERSION: ClassVar[int] = 1

    run: str
    shown: list[Placed]
    hidden: list[Placed]
    notes: list[str] = field(default_factory=list)
    src_roots: list[str] = field(default_factory=list)
    advised: bool = True  # the advisor ran on this run (its list may be empty)

    def to_json(self) -> documents.Advice:
        return {
            "kind": "advice",
            "version": self.VERSION,
            "run": self.run,
            "advised": self.advised,
            "findings": [p.to_json() for p in self.shown],
            "hidden": len(self.hidden),
            "hidden_findings": [p.to_json() for p in self.hidden],
            "notes": self.notes,
            "src_roots": self.src_roots,
        }


def measured_gain(finding: Finding) -> float | None:
    """1 - 1/ratio of a verified finding (ratio = old time / new time).

    An experiment whose verdict is "same" measured no difference distinguishable
    from noise: its gain is 0, whatever the point estimate of the ratio was.
    """
    verified = finding.verified or {}
    if verified.get("verdict") == "same":
        return 0.0
    ratio = verified.get("ratio")
    if not isinstance(ratio, int | float) or ratio <= 0:
        return None
    return 1.0 - 1.0 / float(ratio)


def placed(finding: Finding, hidden_because: str = "") -> Placed:
    measured = measured_gain(finding)
    return Placed(finding, gain(finding), measured is not None, hidden_because)


def why_hidden(finding: Finding) -> str:
    verified = finding.verified or {}
    if verified.get("verdict") == "same":
        return HIDDEN_BY_VERDICT
    if too_few_samples(finding) and above_the_floor(finding):
        support = finding.details[SUPPORT]
        return (
            f"{HIDDEN_BY_FEW_SAMPLES} ({support}; with fewer than {MIN_SUPPORT} its share "
            "could be less than half what it says): record a longer run"
        )
    return HIDDEN_BY_NOISE


def hidden_summary(hidden: Iterable[documents.PlacedFinding]) -> str:
    """Why the hidden findings are hidden, counted: "2 below the noise floor, 1 ..."."""
    short = {HIDDEN_BY_VERDICT: "measured no difference", HIDDEN_BY_NOISE: "below the noise floor"}
    counts = Counter(
        "on too few samples"
        if because.startswith(HIDDEN_BY_FEW_SAMPLES)
        else short.get(because, "below the noise floor")
        for because in (p.get("hidden_because", "") for p in hidden)
    )
    return ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda c: -c[1]))


def too_few_samples(finding: Finding) -> bool:
    support = finding.details.get(SUPPORT)
    return isinstance(support, int) and support < MIN_SUPPORT and measured_gain(finding) is None


def above_the_floor(finding: Finding) -> bool:
    return is_diagnostic(finding) or finding.kind in EXACT_KINDS or gain(finding) >= NOISE_FLOOR


def share_margin(share: float, samples: int) -> float:
    """Half the 95% interval of a share drawn from `samples` samples (normal approximation)."""
    return 1.96 * math.sqrt(share * (1 - share) / samples) if samples else 1.0


def advice(
    run: str,
    findings: Iterable[Finding],
    *,
    show_all: bool = False,
    notes: list[str] | None = None,
    src_roots: list[str] | None = None,
    advised: bool = True,
) -> Advice:
    """The one ranked document of a run's findings."""
    ranked = rank(findings, show_all=show_all)
    return Advice(
        run=run,
        shown=[placed(f) for f in ranked.shown],
        hidden=[placed(f, why_hidden(f)) for f in ranked.hidden],
        notes=notes or [],
        src_roots=src_roots or [],
        advised=advised,
    )


def gain(finding: Finding) -> float:
    measured = measured_gain(finding)
    return measured if measured is not None else finding.estimated_gain


def clamp(finding: Finding) -> Finding:
    finding.share = min(max(finding.share, 0.0), 1.0)
    finding.estimated_gain = min(max(finding.estimated_gain, 0.0), finding.share)
    finding.confidence = min(max(finding.confidence, 0.0), 1.0)
    return finding


def is_diagnostic(finding: Finding) -> bool:
    return finding.kind in DIAGNOSTIC_KINDS and finding.share >= DIAGNOSTIC_MIN_SHARE


def blinds_the_ranking(finding: Finding) -> bool:
    """A diagnostic large enough that the other findings stand on a partial picture.

    Its `blind_share` detail, when set, is the part that hides what runs (nameless
    code in a library a rule names by its DSO does not).
    """
    blind = finding.details.get("blind_share", finding.share)
    return is_diagnostic(finding) and blind >= DIAGNOSTIC_FIRST_SHARE


def distinct(findings: Iterable[Finding]) -> list[Finding]:
    """Findings without repeats of the same rule at the same place (first one kept)."""
    seen: set[tuple[str, str, str, str, int]] = set()
    kept = []
    for f in findings:
        key = (f.rule, f.title, f.function, f.file, f.line)
        if key not in seen:
            seen.add(key)
            kept.append(f)
    return kept


def rank(findings: Iterable[Finding], *, show_all: bool = False) -> Ranked:
    ordered = sorted(
        (clamp(f) for f in distinct(findings)),
        key=lambda f: (
            not blinds_the_ranking(f),
            -gain(f),
            -f.confidence,
            f.rule,
        ),
    )
    shown: list[Finding] = []
    hidden: list[Finding] = []
    for f in ordered:
        visible = show_all or (above_the_floor(f) and not too_few_samples(f))
        (shown if visible else hidden).append(f)
    return Ranked(shown, hidden)
