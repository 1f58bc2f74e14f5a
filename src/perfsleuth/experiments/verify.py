"""Proof for a finding (`advise --verify`): the one verification registry, by finding kind.

verify_finding(finding, trial) returns the finding's `verified` field, or None when
the finding's kind has no verifier or it cannot run here (the reason then goes to
the context's notes). A Trial is what verifying needs beyond the analyzers' Context:
the command to run again and the store the measured experiments are kept in (the
analyzers never see the store). The verifiers (VERIFIERS):

  allocator      run the recorded command with the fix's allocator preloaded (A/B);
  build-flags    rebuild with the fix's flags and run both builds (A/B);
  aliasing-write recompile a scratch copy of the unit with the fix, with the user's
                 compiler (aliasing.py); with the build command, also build the
                 changed program and run both (A/B);
  python-json    run the recorded Python command with json backed by orjson (python_shim.py);
  runtime-tuning run the recorded command with the fix's environment variables (A/B).

The measured ones need the recorded command (empty: not verified) and read
the context's options (AnalyzerOptions): verify_runs, verify_warmup, and build, the shell
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analyzers import Context
from ..errors import UserError
from ..model.findings import Finding
from ..store.runs import Store
from . import allocator, build, python_shim, result
from .aliasing import timed_sides, verify_aliasing
from .runner import Side, choose_metric, measure
from .verdict import ratio_sentence


@dataclass
class Trial:
    """What verifying a run's findings needs: the analyzers' context, the recorded
    command to run again (empty: only what needs no run is verified) and the store the
    measured experiments are kept in (None: they are not kept)."""

    ctx: Context
    command: list[str]
    store: Store | None = None

    def scratch(self, name: str) -> Path:
        """A folder for the trial's builds and shims, in the store when there is one."""
        return (self.store.root if self.store else Path(".perfsleuth")) / name


Verifier = Callable[[Finding, Trial], dict[str, Any] | None]
Sides = Callable[[Finding, Trial], list[Side] | None]


def verify_finding(finding: Finding, trial: Trial) -> dict[str, Any] | None:
    verifier = VERIFIERS.get(finding.kind)
    if verifier is None:
        return None
    try:
        return verifier(finding, trial)
    except UserError as e:
        trial.ctx.notes.append(f"{finding.rule} not verified: {e}")
        return None


def _measured(prepare: Sides) -> Verifier:
    """A verifier that runs the recorded command on the sides `prepare` makes."""

    def verifier(finding: Finding, trial: Trial) -> dict[str, Any] | None:
        if not trial.command:
            return None
        sides = prepare(finding, trial)
        return _measure(finding, trial, sides) if sides is not None else None

    return verifier


def _recompiled(finding: Finding, trial: Trial) -> dict[str, Any] | None:
    """The compiler's proof, and with the build command and the recorded command, the
    changed program timed against the original."""
    ctx = trial.ctx
    proof = verify_aliasing(finding, ctx)
    if proof is None:
        return None
    patched = proof.pop("patched_files")
    if not trial.command or not ctx.options.build:
        proof["timed"] = False
        ctx.notes.append(
            f"{finding.rule}: the change was compiled, not timed; pass the build command "
            "(`advise --verify --build 'SHELL CMD'`, building into $OUT) to time it"
        )
        return proof
    cwd = _cwd(ctx) or os.getcwd()
    workload = [_in_out(trial.command[0]), *trial.command[1:]]
    sides = timed_sides(
        finding,
        {**proof, "patched_files": patched},
        ctx.options.build,
        workload,
        trial.scratch("builds"),
        cwd,
    )
    # CPU time: the loop is single-threaded computing, and on a shared machine the
    # wall time also counts the waits for a core.
    measured = _measure(finding, trial, sides, "cpu")
    measured["function_ratio"] = function_ratio(measured["ratio"], finding.share)
    return {
        **proof,
        **measured,
        "timed": True,
        "summary": f"{proof['summary']}; {measured['summary']}",
    }


def function_ratio(program_ratio: float, share: float) -> float | None:
    """The function's own speed-up implied by the program's, when the function took
    `share` of the program's time: T' = T (1 - s) + T s / r. None when the program's
    gain is more than the function's share could give (noise, or other code changed)."""
    if share <= 0:
        return None
    rest = 1.0 / program_ratio - (1.0 - share)
    return round(share / rest, 2) if rest > 0 else None


def _orjson(finding: Finding, trial: Trial) -> dict[str, Any] | None:
    if not trial.command:
        return None
    shims = trial.scratch("shims")
    sides, report = python_shim.orjson_sides(trial.command, shims, _cwd(trial.ctx))
    verified = _measure(finding, trial, sides)
    python_shim.check_loaded(report)
    return verified


def _measure(
    finding: Finding, trial: Trial, sides: list[Side], requested: str | None = None
) -> dict[str, Any]:
    """`requested` None: wall time, or CPU time on a busy machine (runner.choose_metric)."""
    runs = trial.ctx.options.verify_runs
    warmup = trial.ctx.options.verify_warmup
    metric, note = choose_metric(requested)
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
    if trial.store is not None:
        raw = {**verified, "finding": finding.rule, "raw": result.raw_runs(series)}
        run_id = trial.ctx.run.id
        verified["experiment"] = result.store_experiment(trial.store, run_id, "verify", raw)
    return verified


def _cwd(ctx: Context) -> str | None:
    return ctx.run.cwd if ctx.run.cwd and os.path.isdir(ctx.run.cwd) else None


def _allocator_sides(finding: Finding, trial: Trial) -> list[Side] | None:
    chosen = named_allocator(finding.fix.get("command", ""))
    names = [chosen] if chosen else [a.name for a in allocator.ALLOCATORS]
    p = allocator.plan(trial.command, names, _cwd(trial.ctx))
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


def _environment_sides(finding: Finding, trial: Trial) -> list[Side] | None:
    env = {str(k): str(v) for k, v in finding.fix.get("env", {}).items()}
    if not env:
        raise UserError("the finding names no environment variables to try")
    name = " ".join(f"{k}={v}" for k, v in env.items())
    cwd = _cwd(trial.ctx)
    return [Side("baseline", trial.command, cwd=cwd), Side(name, trial.command, env, cwd)]


def _build_sides(finding: Finding, trial: Trial) -> list[Side] | None:
    build_command = trial.ctx.options.build
    if not build_command:
        trial.ctx.notes.append(
            f"{finding.rule} not verified: rebuilding needs the build command; run "
            "`perfsleuth try build --build 'SHELL CMD' -- {out}/PROGRAM ARGS`"
        )
        return None
    variant = _variant_of(finding)
    workload = [_in_out(trial.command[0]), *trial.command[1:]]
    p = build.plan(build_command, [variant], workload, trial.scratch("builds"), _cwd(trial.ctx))
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
    "runtime-tuning": _measured(_environment_sides),
}
