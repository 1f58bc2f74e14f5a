"""The combined experiment: every fix at once, and each one's share, in one interleaved run.

A post that makes a program faster in steps (an allocator, then a code change, then
PGO) reports each step over the one before and all of them over the start. The sides
here are cumulative, in that order: the baseline (the source as it is, built as it
is), + the allocator (LD_PRELOAD, checked with the loader like `try allocator`),
+ the patch (a patched copy of the source, like `try patch`), + the build variant
(the patched copy rebuilt with the variant's flags, like `try build`). Each side is
compared with the baseline, and each step with the side before it; all are measured
in the same rounds, so the steps and the whole come from the same machine state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..model.progress import SILENT, Progress
from . import allocator as allocators
from . import patch as patches
from .build import Builder, Plan, Variant, build_variant, check_workload, workload_side
from .runner import Side, check_runnable


@dataclass(frozen=True)
class Fixes:
    """The steps asked for; at least one."""

    allocator: str = ""
    patch_file: Path | None = None
    variant: Variant | None = None

    def check(self) -> None:
        if not (self.allocator or self.patch_file or self.variant):
            raise UserError(
                "nothing to combine: give at least one of --allocator, --patch, --variant"
            )


def plan(
    fixes: Fixes,
    build_command: str,
    workload: list[str],
    source: Path,
    root: Path,
    progress: Progress = SILENT,
) -> Plan:
    """Build the baseline and each cumulative step; the baseline first."""
    fixes.check()
    check_workload(workload)
    notes: list[str] = []
    tree = source.resolve()
    patched_tree = None
    if fixes.patch_file:
        tree, patched_tree = patches.trees(fixes.patch_file, source, root, progress)
        notes.append(f"{fixes.patch_file.name} applied to a copy of {source.resolve()}")
    baseline = Builder(build_command, root, str(tree), progress).build("baseline", {})
    sides = [workload_side("baseline", workload, baseline)]
    env: dict[str, str] = {}
    names: list[str] = []
    if fixes.allocator:
        env = preload(fixes.allocator, sides[0], notes)
        names.append(fixes.allocator)
        sides.append(step(sides[0], names, env))
    if patched_tree is not None:
        tree = patched_tree
        out = Builder(build_command, root, str(tree), progress).build("patched", {})
        names.append("patched")
        sides.append(step(workload_side("patched", workload, out), names, env))
    if fixes.variant:
        builder = Builder(build_command, root, str(tree), progress)
        out = build_variant(builder, fixes.variant, workload)
        names.append(fixes.variant.name)
        sides.append(step(workload_side(fixes.variant.name, workload, out), names, env))
    return Plan(sides, {}, notes)


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
