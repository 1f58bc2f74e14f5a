"""The combined experiment: every fix at once, and each one's share, in one interleaved run.

A post that makes a program faster in steps (an allocator, then a code change, then
PGO) reports each step over the one before and all of them over the start. The sides
here are cumulative, in that order: the baseline (the source as it is, built as it
is), + the allocator (LD_PRELOAD, checked with the loader like `try allocator`),
+ the patch (a patched copy of the source, like `try patch`), + the build variant
(the patched copy rebuilt with the variant's flags, like `try build`), + a library the
program loads rebuilt from its own source with a variant's flags (like `try build
--dependency`: Z3's PGO+LTO under K2, the post's last step). Each side is
compared with the baseline, and each step with the side before it; all are measured
in the same rounds, so the steps and the whole come from the same machine state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from . import allocator as allocators
from . import patch as patches
from .build import (
    Builder,
    Plan,
    Request,
    Variant,
    build_variant,
    check_dependency,
    check_workload,
    workload_side,
)
from .runner import Side, check_runnable


@dataclass(frozen=True)
class Dependency:
    """A shared library the program loads, rebuilt from its own source (Z3 under K2)."""

    soname: str
    build_command: str  # run in the current folder, contract as `try build --dependency`
    variant: Variant


@dataclass(frozen=True)
class Fixes:
    """The steps asked for; at least one."""

    allocator: str = ""
    patch_file: Path | None = None
    variant: Variant | None = None
    dependency: Dependency | None = None

    def check(self) -> None:
        if not (self.allocator or self.patch_file or self.variant or self.dependency):
            raise UserError(
                "nothing to combine: give at least one of --allocator, --patch, --variant, "
                "--dependency"
            )


def plan(fixes: Fixes, request: Request) -> Plan:
    """Build the baseline and each cumulative step; the baseline first."""
    fixes.check()
    check_workload(request.workload)
    notes: list[str] = []
    tree = request.source.resolve()
    patched_tree = None
    if fixes.patch_file:
        tree, patched_tree = patches.trees(
            fixes.patch_file, request.source, request.root, request.progress
        )
        notes.append(f"{fixes.patch_file.name} applied to a copy of {request.source.resolve()}")
    baseline = _builder(request, tree).build("baseline", {})
    sides = [workload_side("baseline", request.workload, baseline)]
    env: dict[str, str] = {}
    names: list[str] = []
    if fixes.allocator:
        env = preload(fixes.allocator, sides[0], notes)
        names.append(fixes.allocator)
        sides.append(step(sides[0], names, env))
    if patched_tree is not None:
        tree = patched_tree
        out = _builder(request, tree).build("patched", {})
        names.append("patched")
        sides.append(step(workload_side("patched", request.workload, out), names, env))
    if fixes.variant:
        out = build_variant(_builder(request, tree), fixes.variant, request.workload)
        names.append(fixes.variant.name)
        built = workload_side(fixes.variant.name, request.workload, out)
        sides.append(step(built, names, env))
    if fixes.dependency:
        sides.append(dependency_step(fixes.dependency, sides[-1], names, request, notes))
    return Plan(sides, {}, notes)


def _builder(request: Request, tree: Path) -> Builder:
    return Builder(request.build_command, request.root, str(tree), request.progress)


def dependency_step(
    dependency: Dependency, last: Side, names: list[str], request: Request, notes: list[str]
) -> Side:
    """The last step: the program of the step before, with its library rebuilt as the
    variant says; a PGO build of it trains on that program."""
    builder = Builder(
        dependency.build_command,
        request.root / "dependency",
        None,
        request.progress,
        dependency.soname,
        program=last,
    )
    out = build_variant(builder, dependency.variant, request.workload)
    names.append(f"{dependency.soname.split('.so', 1)[0]}-{dependency.variant.name}")
    side = builder.side("+".join(names), request.workload, out)
    check_dependency(side, dependency.soname, notes)
    return side


def step(built: Side, names: list[str], env: dict[str, str]) -> Side:
    """The side of a cumulative step: its build, with the allocator's preload if any."""
    return Side("+".join(names), built.argv, {**built.env, **env}, built.cwd)


def preload(name: str, baseline: Side, notes: list[str]) -> dict[str, str]:
    """The allocator's LD_PRELOAD, after the same checks as `try allocator`."""
    (wanted,) = allocators.by_names([name])
    library = wanted.library()
    if library is None:
        raise UserError(
            f"{name} is not installed; install it with `{allocators.install_command([wanted])}`"
        )
    reason = allocators.refusal(check_runnable(baseline))
    if reason:
        raise UserError(f"cannot preload {name}: {reason}")
    notes.append(allocators.verify_preload(baseline.argv, library, baseline.cwd))
    return allocators.preload_env(library)
