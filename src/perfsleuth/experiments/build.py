"""The build experiment: rebuild the program with other compiler flags and compare the builds.

The contract with the user's build command (run with `sh -c` in the current folder):
- `OUT` is an absolute, empty folder for this variant; the build writes its
  program there (object files too, or a stale object from another variant is reused);
- `CFLAGS`, `CXXFLAGS` and `LDFLAGS` carry the variant's flags, after any the caller
  already had in the environment; the baseline build gets no added flags.
The workload CMD runs with the same `OUT` in its environment, and `{out}` in its
arguments replaced by that folder, so `-- {out}/prog input.txt` runs each build.

With `--dependency SONAME` the build command builds a shared library the program
loads (Z3 under K2) instead of the program: the baseline is the program as it is,
with the installed library, and each variant runs it with the folder of $OUT that
holds its build of the library first on LD_LIBRARY_PATH; the loader is asked
(LD_TRACE_LOADED_OBJECTS) that the program really loads that copy.

`pgo` does three steps: an instrumented build (-fprofile-generate), one training
run of CMD, then a rebuild into the same OUT path (GCC names its profile files after
the object paths) with -fprofile-use. Clang's raw profiles are merged with
llvm-profdata first.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..binaries import binary_at
from ..errors import UserError
from ..model.progress import SILENT, Progress
from .runner import Side, check_runnable

OUT_PLACEHOLDER = "{out}"
BUILD_TAIL_LINES = 15
COMMON_FLAGS = "-g"  # keeps symbols, so a variant can still be profiled


@dataclass(frozen=True)
class Variant:
    name: str
    cflags: str
    ldflags: str = ""
    pgo: bool = False  # the three steps: instrumented build, training run, optimized build


VARIANTS = {
    v.name: v
    for v in (
        Variant("O0", "-O0"),
        Variant("O1", "-O1"),
        Variant("O2", "-O2"),
        Variant("O3", "-O3"),
        Variant("Os", "-Os"),
        Variant("native", "-O2 -march=native"),
        Variant("lto", "-O2 -flto", "-flto"),
        Variant("pgo", "-O2", pgo=True),
        Variant("pgo-lto", "-O2 -flto", "-flto", pgo=True),
        Variant("autofdo", "-O2"),
    )
}
DEFAULT_VARIANTS = ("O2", "O3", "native", "lto", "pgo")
AUTOFDO_UNAVAILABLE = (
    "not run: AutoFDO turns a perf profile into a GCC profile with create_gcov, but the "
    'one Debian 12 ships (autofdo 0.19) writes files GCC 12 cannot read ("cannot read '
    'function profile"); use pgo (instrumented, three steps) instead'
)


class BuildFailed(UserError):
    """A build (or a PGO step) of one variant failed; the message has its last lines."""


def parse_variants(text: str | None) -> list[Variant]:
    names = [n.strip() for n in text.split(",") if n.strip()] if text else list(DEFAULT_VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise UserError(f"unknown build variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
    return [VARIANTS[n] for n in names]


def check_workload(argv: list[str]) -> None:
    if not any(OUT_PLACEHOLDER in w or "$OUT" in w or "${OUT}" in w for w in argv):
        raise UserError(
            "the command must run the program each build wrote: use {out} in it, "
            "e.g. `-- {out}/prog ARGS` (or $OUT in a shell command)"
        )


def workload_side(name: str, argv: list[str], out: Path, cwd: str | None = None) -> Side:
    words = [w.replace(OUT_PLACEHOLDER, str(out)) for w in argv]
    return Side(name, words, {"OUT": str(out)}, cwd)


def flags_env(cflags: str, ldflags: str) -> dict[str, str]:
    def joined(var: str, extra: str) -> str:
        return " ".join(p for p in (os.environ.get(var, ""), extra) if p)

    return {
        "CFLAGS": joined("CFLAGS", cflags),
        "CXXFLAGS": joined("CXXFLAGS", cflags),
        "LDFLAGS": joined("LDFLAGS", ldflags),
    }


@dataclass(frozen=True)
class Request:
    """What a build experiment is given: how to build the program, what to run, where."""

    build_command: str
    workload: list[str]
    source: Path  # the folder the build command runs in
    root: Path  # where the builds go
    progress: Progress = SILENT


@dataclass
class Builder:
    """Runs the user's build command into per-variant folders under `root`."""

    command: str
    root: Path
    cwd: str | None = None  # where the build command and the workload run
    progress: Progress = SILENT
    dependency: str = ""  # a shared library the build makes, loaded by the program as it is
    program: Side | None = None  # with a dependency: the program it runs under, if built

    def side(self, name: str, workload: list[str], out: Path) -> Side:
        """The workload against this build: the program from $OUT, or, for a dependency,
        the program (as it is, or the one built) with the library from $OUT first on
        LD_LIBRARY_PATH."""
        if self.program is not None:
            side = Side(name, list(self.program.argv), dict(self.program.env), self.program.cwd)
        else:
            side = workload_side(name, workload, out, self.cwd)
        if self.dependency:
            folder = str(library_folder(out, self.dependency))
            existing = side.env.get("LD_LIBRARY_PATH", os.environ.get("LD_LIBRARY_PATH", ""))
            side.env["LD_LIBRARY_PATH"] = f"{folder}:{existing}" if existing else folder
        return side

    def out(self, name: str) -> Path:
        return (self.root / name).resolve()

    def build(self, name: str, env: dict[str, str], step: str = "") -> Path:
        out = self.out(name)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        log = self.root / f"{name}{'-' + step if step else ''}.log"
        label = f"{name} ({step})" if step else name
        self.progress.phase(f"building {label}")
        with open(log, "wb") as fh:
            done = subprocess.run(
                ["/bin/sh", "-c", self.command],
                env={**os.environ, **env, "OUT": str(out)},
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0:
            raise BuildFailed(
                f"the build of variant {label} failed with exit status {done.returncode}; "
                f"last lines of {log}:\n{tail(log)}"
            )
        if not any(out.iterdir()):
            raise BuildFailed(
                f"the build of variant {label} wrote nothing into $OUT ({out}); the build "
                "command must put its program into the folder named by $OUT"
            )
        return out


def tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()[-BUILD_TAIL_LINES:]
    return "\n".join(f"    {line}" for line in lines)


def digest(folder: Path) -> str:
    """One hash over every file in the folder: equal digests mean identical builds."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def build_pgo(builder: Builder, variant: Variant, workload: list[str]) -> Path:
    """Instrumented build, one training run, rebuild with the profile."""
    profile_dir = builder.out(f"{variant.name}-profile")
    shutil.rmtree(profile_dir, ignore_errors=True)
    generate = f"-fprofile-generate={profile_dir}"
    env = flags_env(
        f"{variant.cflags} {COMMON_FLAGS} {generate} -fprofile-update=atomic",
        f"{variant.ldflags} {generate}",
    )
    out = builder.build(variant.name, env, "instrumented")
    side = builder.side(variant.name, workload, out)
    if builder.dependency:
        # before training: a program that loads another copy of the library trains nothing
        check_dependency(side, builder.dependency, [])
    train(side, variant.name)
    use = f"-fprofile-use={usable_profile(profile_dir)} -Wno-missing-profile"
    env = flags_env(f"{variant.cflags} {COMMON_FLAGS} {use}", f"{variant.ldflags} {use}")
    return builder.build(variant.name, env, "optimized")


def train(side: Side, name: str) -> None:
    done = subprocess.run(
        side.argv,
        env={**os.environ, **side.env},
        cwd=side.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise BuildFailed(
            f"the training run of variant {name} exited with status {done.returncode}: "
            + " / ".join(last)
        )


def usable_profile(profile_dir: Path) -> Path:
    """The argument for -fprofile-use: GCC's folder of .gcda, or Clang's merged file."""
    if any(profile_dir.rglob("*.gcda")):
        return profile_dir
    raw = sorted(profile_dir.rglob("*.profraw"))
    if not raw:
        raise BuildFailed(
            "the pgo training run wrote no profile: the build command must pass $CFLAGS "
            "(or $CXXFLAGS) to the compiler and $LDFLAGS to the linker"
        )
    merger = shutil.which("llvm-profdata") or shutil.which("llvm-profdata-16")
    if merger is None:
        raise BuildFailed(
            "merging Clang's profile needs llvm-profdata (apt-get install -y llvm-16)"
        )
    merged = profile_dir / "merged.profdata"
    subprocess.run([merger, "merge", "-o", str(merged), *map(str, raw)], check=True)
    return merged


def build_variant(builder: Builder, variant: Variant, workload: list[str]) -> Path:
    if variant.name == "autofdo":
        raise BuildFailed(AUTOFDO_UNAVAILABLE)
    if variant.pgo:
        return build_pgo(builder, variant, workload)
    env = flags_env(f"{variant.cflags} {COMMON_FLAGS}", variant.ldflags)
    return builder.build(variant.name, env)


@dataclass
class Plan:
    sides: list[Side]  # baseline first
    refused: dict[str, str]  # variant -> why it could not be built
    notes: list[str]


def library_folder(out: Path, soname: str) -> Path:
    """The folder under $OUT holding the library the build made (its soname, or any
    version of it: libz3.so.4 is found as libz3.so.4.8 too)."""
    stem = soname.split(".so", 1)[0]
    found = sorted(out.rglob(soname)) or sorted(out.rglob(f"{stem}.so*"))
    if not found:
        raise BuildFailed(
            f"the build wrote no {soname} (nor {stem}.so*) under $OUT ({out}): with "
            "--dependency the build command must put the library it builds there"
        )
    return found[0].parent


def loaded_from(side: Side, soname: str) -> str | None:
    """Where the side's program loads the library from (the loader's own answer), or
    None when the program is not a dynamic ELF file perfsleuth can ask about."""
    program = check_runnable(side)
    binary = binary_at(program)
    if binary is None or not binary.dynamic:
        return None
    done = subprocess.run(
        [program],
        env={**os.environ, **side.env, "LD_TRACE_LOADED_OBJECTS": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.splitlines():
        name, _, where = line.strip().partition(" => ")
        if name == soname:
            return where.split(" (", 1)[0]
    return None


def check_dependency(side: Side, soname: str, notes: list[str]) -> None:
    """The variant's program must load the library built for it, not the installed one."""
    where = loaded_from(side, soname)
    folder = side.env["LD_LIBRARY_PATH"].split(":", 1)[0]
    if where is None:
        notes.append(
            f"{side.name}: could not ask the loader where {side.argv[0]} finds {soname} "
            "(not a dynamic program, or it does not link it directly)"
        )
    elif os.path.dirname(os.path.realpath(where)) != os.path.realpath(folder):
        raise BuildFailed(
            f"{side.argv[0]} still loads {soname} from {where}, not from the build in "
            f"{folder} (an RPATH, or a different soname?)"
        )


def plan(
    build_command: str,
    variants: list[Variant],
    workload: list[str],
    root: Path,
    cwd: str | None = None,
    progress: Progress = SILENT,
    dependency: str = "",
) -> Plan:
    """Build the baseline and every variant; the baseline must build, variants may fail.

    With `dependency` (a library's soname) the build command builds that library, the
    baseline is the program as it is (the installed library) and each variant runs it
    with its build of the library."""
    if not dependency:
        check_workload(workload)
    builder = Builder(build_command, root, cwd, progress, dependency)
    if dependency:
        result = Plan([Side("baseline", list(workload), {}, cwd)], {}, [])
        base_digest = ""
    else:
        baseline = builder.build("baseline", {})
        result = Plan([workload_side("baseline", workload, baseline, cwd)], {}, [])
        base_digest = digest(baseline)
    for variant in variants:
        try:
            out = build_variant(builder, variant, workload)
            side = builder.side(variant.name, workload, out)
            if dependency:
                check_dependency(side, dependency, result.notes)
        except BuildFailed as e:
            result.refused[variant.name] = str(e)
            continue
        if digest(out) == base_digest:
            result.notes.append(
                f"{variant.name} built byte-identical output to the baseline: the baseline "
                "already uses these flags, or the build command ignores $CFLAGS/$LDFLAGS"
            )
        result.sides.append(side)
    return result
