"""A function traced with secret variants (`--mode cache --variants FILE`) runs
different instructions, branches or cache lines for different secrets: its timing
can leak the secret. Not a speed finding: its gain is zero; rank.py shows the kind
whatever its gain, with full confidence because the traces are exact."""

from __future__ import annotations

from ..cpu_cache_projections import traced_shares
from ..model.cpu_cache import ConstantTime, parting_text
from ..model.findings import Finding
from . import Context


def analyze(ctx: Context) -> list[Finding]:
    findings = []
    for function, doc, share in traced_shares(ctx.profile, ctx.cache):
        verdict = doc.constant_time
        if verdict is not None and not verdict["constant_time"]:
            findings.append(finding(function, verdict, share))
    return findings


def finding(function: str, verdict: ConstantTime, share: float) -> Finding:
    first = verdict["differences"][0]
    file, _, line = first["first_source"].rpartition(":")
    return Finding(
        rule="cache.constant-time",
        kind="constant-time",
        title=f"{function} depends on the secret: its {first['what']} differs between secrets",
        function=function,
        file=file if line.isdigit() else "",
        line=int(line) if line.isdigit() else 0,
        share=share,
        estimated_gain=0.0,
        confidence=1.0,
        evidence=[
            f"secret #{d['variant'] + 1} differs from #1: {parting_text(d)}"
            for d in verdict["differences"]
        ],
        suggestion=(
            "make the secret-dependent branch or table lookup branch-free and data-independent "
            "(e.g. compare all bytes, select with masks)"
        ),
        details={"instructions_per_variant": verdict["instructions_per_variant"]},
    )
