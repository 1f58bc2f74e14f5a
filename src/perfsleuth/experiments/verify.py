"""Proof for a finding (`advise --verify`): the one verification registry, by finding kind.

verify_finding(finding, ctx, command) returns the finding's `verified` field, or
None when the finding's kind has no verifier or it cannot run here (the reason
then goes to ctx.notes). The verifiers (VERIFIERS):

  allocator      run the recorded command with the fix's allocator preloaded (A/B);
  build-flags    rebuild with the fix's flags and run both builds (A/B);
  aliasing-write recompile a scratch copy of the unit with the fix (aliasing.py);
  python-json    run the recorded Python command with json backed by orjson (python_shim.py).

The measured ones need the recorded command (empty: not verified) and read
ctx.options (AnalyzerOptions): verify_runs, verify_warmup, and build, the shell
command that builds the program into $OUT (see build.py); a build-flags finding
without it is not verified. A build-flags finding's flags come from fix["variant"]
(a name from build.VARIANTS) or fix["flags"] (compiler flags). The command runs in
the recorded run's folder; for rebuilds its program is taken from $OUT under the
same file name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..analyzers import Context
from ..errors import UserError
from ..model.findings import Finding
from . import allocator, build, python_shim, result
from .aliasing import verify_aliasing
from .runner import Side, choose_metric, measure
from .verdict import ratio_sentence

Verifier = Callable[[Finding, Context, list[str]], dict[str, Any] | None]
Sides = Callable[[Finding, Context, list[str]], list[Side] | None]


def verify_finding(finding: Finding, ctx: Context, command: list[str]) -> dict[str, Any] | None:
    verifier = VERIFIERS.get(finding.kind)
    if verifier is None:
        return None
    try:
        return verifier(finding, ctx, command)
    except UserError as e:
        ctx.notes.append(f"{finding.rule} not verified: {e}")
        return None


def _measured(prepare: Sides) -> Verifier:
    """A verifier that runs the recorded command on the sides `prepare` makes."""

    def verifier(finding: Finding, ctx: Context, command: list[str]) -> dict[str, Any] | None:
        if not command:
            return None
        sides = prepare(finding, ctx, command)
        return _measure(finding, ctx, sides) if sides is not None else None

    return verifier


def _recompiled(finding: Finding, ctx: Context, _command: list[str]) -> dict[str, Any] | None:
    return verify_aliasing(finding, ctx)


def _orjson(finding: Finding, ctx: Context, command: list[str]) -> dict[str, Any] | None:
    if not command:
        return None
    shims = (ctx.store.root if ctx.store else Path(".perfsleuth")) / "shims"
    sides, report = python_shim.orjson_sides(command, shims, _cwd(ctx))
    verified = _measure(finding, ctx, sides)
    python_shim.check_loaded(report)
    return verified


def _measure(finding: Finding, ctx: Context, sides: list[Side]) -> dict[str, Any]:
    runs = ctx.options.verify_runs
    warmup = ctx.options.verify_warmup
    metric, note = choose_metric(None)
    series = measure(sides, runs, warmup, metric)
    comparison = result.paired(series[0], series[1], metric)
    verified: dict[str, Any] = {
        **result.comparison_json(comparison),
        "variant": sides[1].name,
        "metric": metric,
        "baseline": result.side_summary(series[0]),
        "candidate": result.side_summary(series[1]),
    }
    verified["summary"] = ratio_sentence(sides[1].name, "baseline", verified, metric)
    if note:
        verified["summary"] += f" ({note})"
    if ctx.store is not None:
        raw = {**verified, "finding": finding.rule, "raw": result.raw_runs(series)}
        verified["experiment"] = result.store_experiment(ctx.store, ctx.run.id, "verify", raw)
    return verified


def _cwd(ctx: Context) -> str | None:
    return ctx.run.cwd if ctx.run.cwd and os.path.isdir(ctx.run.cwd) else None


def _allocator_sides(finding: Finding, ctx: Context, command: list[str]) -> list[Side] | None:
    chosen = named_allocator(finding.fix.get("command", ""))
    names = [chosen] if chosen else [a.name for a in allocator.ALLOCATORS]
    p = allocator.plan(command, names, _cwd(ctx))
    if len(p.sides) < 2:
        reasons = list(p.refused.values())
        if p.missing:
            reasons.append(f"not installed; {allocator.install_command(p.missing)}")
        raise UserError("; ".join(reasons) or "no allocator to try")
    return p.sides[:2]


def named_allocator(fix_command: str) -> str | None:
    """The allocator a fix like `LD_PRELOAD=/usr/lib/.../libjemalloc.so.2 CMD` names."""
    for a in allocator.ALLOCATORS:
        if any(soname in fix_command for soname in a.sonames):
            return a.name
    return None


def _build_sides(finding: Finding, ctx: Context, command: list[str]) -> list[Side] | None:
    build_command = ctx.options.build
    if not build_command:
        ctx.notes.append(
            f"{finding.rule} not verified: rebuilding needs the build command; run "
            "`perfsleuth try build --build 'SHELL CMD' -- {out}/PROGRAM ARGS`"
        )
        return None
    variant = _variant_of(finding)
    workload = [_in_out(command[0]), *command[1:]]
    root = (ctx.store.root if ctx.store else Path(".perfsleuth")) / "builds"
    p = build.plan(build_command, [variant], workload, root, _cwd(ctx))
    if variant.name in p.refused:
        raise UserError(p.refused[variant.name])
    return p.sides


def _variant_of(finding: Finding) -> build.Variant:
    named = finding.fix.get("variant")
    if named in build.VARIANTS:
        return build.VARIANTS[named]
    flags = str(finding.fix.get("flags", "")).strip()
    if not flags:
        raise UserError("the finding names no compiler flags to try")
    # "-fprofile-use" alone cannot build: it means the three-step pgo variant.
    pgo = "-fprofile-use" in flags
    usable = [
        f
        for f in flags.split()
        if re.fullmatch(r"-[A-Za-z][\w=.,+-]*", f) and not f.startswith("-fprofile-use")
    ]
    if not any(f.startswith("-O") for f in usable):
        usable.insert(0, "-O2")
    linker = "-flto" if "-flto" in usable else ""
    return build.Variant("flags", " ".join(usable), linker, pgo=pgo)


def _in_out(program: str) -> str:
    return f"{build.OUT_PLACEHOLDER}/{os.path.basename(program)}"


VERIFIERS: dict[str, Verifier] = {
    "allocator": _measured(_allocator_sides),
    "build-flags": _measured(_build_sides),
    "aliasing-write": _recompiled,
    "python-json": _orjson,
}
