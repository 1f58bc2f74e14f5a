"""The patch experiment: a code change, built and measured against the code as it is.

The source folder is copied twice under the store's builds/ folder; the patch is
applied to one copy (`git apply`, which needs no repository: -p1 as `git diff` and
`diff -u a/ b/` write them, else -p0); the user's build command then builds each copy
into its own $OUT, under the same contract as `try build` (build.py), with no flags
added. Building both copies the same way, rather than the user's tree against a copy,
keeps every other difference (paths, stale objects) out of the comparison.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..errors import UserError
from ..model.progress import Progress
from .build import Builder, Plan, Request, check_workload, digest, workload_side

NEVER_COPIED = (".git", ".hg", ".svn", ".perfsleuth", "node_modules")
STRIP_LEVELS = ("1", "0")


def plan(patch_file: Path, request: Request) -> Plan:
    """Copy, patch and build both sides; the baseline first."""
    check_workload(request.workload)
    baseline_tree, patched_tree = trees(patch_file, request.source, request.root, request.progress)
    baseline = _build(request, baseline_tree, "baseline")
    patched = _build(request, patched_tree, "patched")
    notes = [
        f"{patch_file.name} applied to a copy of {request.source.resolve()}; both copies "
        "built alike"
    ]
    if digest(baseline) == digest(patched):
        notes.append(
            f"the patched build is byte-identical to the baseline's: {patch_file.name} changes "
            "nothing the build compiles"
        )
    sides = [workload_side("baseline", request.workload, baseline)]
    sides.append(workload_side("patched", request.workload, patched))
    return Plan(sides, {}, notes)


def _build(request: Request, tree: Path, name: str) -> Path:
    return Builder(request.build_command, request.root, str(tree), request.progress).build(name, {})


def trees(patch_file: Path, source: Path, root: Path, progress: Progress) -> tuple[Path, Path]:
    """Two copies of the source folder under root, the patch applied to the second."""
    patch_file, source = _checked(patch_file, source)
    copies = root / "patch-trees"
    shutil.rmtree(copies, ignore_errors=True)
    progress.phase(f"copying {source} twice")
    baseline_tree = _copy(source, copies / "baseline", root)
    patched_tree = _copy(source, copies / "patched", root)
    progress.phase(f"applying {patch_file.name}")
    apply(patch_file, patched_tree, source)
    return baseline_tree, patched_tree


def _checked(patch_file: Path, source: Path) -> tuple[Path, Path]:
    if not patch_file.is_file():
        raise UserError(f"no patch file at {patch_file}")
    if not source.is_dir():
        raise UserError(f"the source folder {source} does not exist")
    if shutil.which("git") is None:
        raise UserError("applying a patch needs git (apt-get install -y git)")
    return patch_file.resolve(), source.resolve()


def _copy(source: Path, to: Path, store: Path) -> Path:
    store = store.resolve()

    def skipped(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n in NEVER_COPIED or (Path(folder) / n).resolve() == store]

    shutil.copytree(source, to, symlinks=True, ignore=skipped)
    return to


def apply(patch_file: Path, tree: Path, source: Path) -> None:
    """Apply the patch in the tree (a copy of source), or say in one line why it does not."""
    said = ""
    for level in STRIP_LEVELS:
        check = _git_apply(patch_file, tree, level, "--check")
        if check.returncode == 0:
            _git_apply(patch_file, tree, level)
            return
        said = said or _first_error(check.stderr)
    raise UserError(f"{patch_file.name} does not apply to {source}: {said}")


def _git_apply(
    patch_file: Path, tree: Path, level: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "apply", f"-p{level}", "--whitespace=nowarn", *extra, str(patch_file)],
        cwd=tree,
        # a store inside the user's repository: git must not apply relative to its top
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)},
        capture_output=True,
        text=True,
        check=False,
    )


def _first_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or ["git apply failed"])[0]
