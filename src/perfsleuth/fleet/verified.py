"""`fleet advise --verified FILE`: a measured experiment attached to the fleet findings
it measured.

`perfsleuth try allocator|build --format json -o FILE`, run on one host's workload,
measured one program with and without a fix. The result attaches to the fleet findings
of that experiment's kind (allocator, build-flags) whose code runs in a program of the
same file name (a fleet `exe`). The finding gets `verified` (the shape `advise --verify`
gives, plus the program and what it saves), and its `cores_saved` follows the
measurement where it was measured: that program's cores in the range times the measured
gain (1 - 1/ratio; 0 when the verdict is "same"), plus the estimate for the rest of the
finding's code (the part that runs in other programs). `estimated_cores_saved` keeps
the estimate.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import rank
from ..errors import UserError
from ..experiments.verdict import ratio_sentence
from ..experiments.verify import named_allocator
from ..model.findings import Finding
from .labels import Share

KINDS = {"preload_checks": "allocator", "build": "build-flags"}  # try's own key -> kind
COMPARISON = ("verdict", "ratio", "ci95", "runs", "p_value")


@dataclass(frozen=True)
class Measured:
    """One `try` result: the finding kind it verifies and the program it measured."""

    file: str
    kind: str
    program: str  # file name of the program the workload starts
    doc: dict[str, Any]


def load(path: Path) -> Measured:
    """The JSON `perfsleuth try allocator|build --format json` wrote; one line otherwise."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"--verified {path}: {e.strerror}") from None
    except ValueError as e:
        raise UserError(f"--verified {path}: not JSON ({e})") from None
    kind = next((k for key, k in KINDS.items() if isinstance(doc, dict) and key in doc), None)
    if kind is None or not isinstance(doc.get("variants"), list):
        raise UserError(
            f"--verified {path}: not the JSON of `perfsleuth try allocator|build --format json`"
        )
    if not _measured_variants(doc):
        raise UserError(f"--verified {path}: no variant was measured (every one failed)")
    return Measured(str(path), kind, program_of(doc["baseline"]["command"]), doc)


def program_of(command: str) -> str:
    """The file name of the program a side's command starts (also through `sh -c`)."""
    words = shlex.split(command)
    if words[:2] == ["/bin/sh", "-c"] and len(words) > 2:
        words = [w for w in shlex.split(words[2]) if w != "exec"]
    return os.path.basename(words[0]) if words else ""


def _measured_variants(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in doc["variants"] if v.get("ratio") is not None]


def attach(
    doc: dict[str, Any],
    finding: Finding,
    exes: Sequence[Share],
    seconds: float,
    measured: Sequence[Measured],
) -> None:
    """Attach the first result of the finding's kind that measured one of its programs."""
    for m in measured:
        ran = [s for s in exes if os.path.basename(s.value) == m.program]
        if m.kind != finding.kind or not ran:
            continue
        verified = verified_json(m, doc.get("fix") or {})
        gain = rank.measured_gain(replace(finding, verified=verified)) or 0.0
        program_cores = sum(s.of_value for s in ran) / 1e9 / seconds
        verified.update(program_cores=program_cores, cores_saved=gain * program_cores)
        elsewhere = 1 - sum(s.cpu_ns for s in ran) / sum(s.cpu_ns for s in exes)
        doc["estimated_cores_saved"] = doc["cores_saved"]
        doc["cores_saved"] = verified["cores_saved"] + doc["cores_saved"] * elsewhere
        doc["verified"] = verified
        return


def verified_json(m: Measured, fix: dict[str, Any]) -> dict[str, Any]:
    """The variant the finding's fix names (else the fastest measured), as `verified`."""
    variants = _measured_variants(m.doc)
    named = (fix.get("variant"), named_allocator(str(fix.get("command", ""))))
    chosen = [v for v in variants if v["name"] in named] or sorted(
        variants, key=lambda v: -v["ratio"]
    )
    v = chosen[0]
    result = {key: v[key] for key in COMPARISON}
    return {
        **result,
        "variant": v["name"],
        "metric": m.doc["metric"],
        "baseline": m.doc["baseline"],
        "candidate": v["summary"],
        "summary": ratio_sentence(v["name"], "baseline", result, m.doc["metric"]),
        "experiment": m.doc.get("experiment", ""),
        "program": m.program,
        "file": m.file,
    }


def unattached(measured: Sequence[Measured], findings: Sequence[dict[str, Any]]) -> list[str]:
    """A note for each result no finding took."""
    taken = {f["verified"]["file"] for f in findings if "verified" in f}
    return [
        f"{m.file} (try on {m.program}) attached to no finding: no {m.kind} finding of this "
        f"range runs in a program named {m.program}"
        for m in measured
        if m.file not in taken
    ]
