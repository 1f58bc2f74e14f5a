"""The allocator experiment: the program as it is, against each installed malloc via LD_PRELOAD.

Before measuring, perfsleuth makes sure a preload can work and did work:
- statically, on the program's ELF file: a static binary has no dynamic loader to
  preload into, the loader ignores LD_PRELOAD for setuid/setgid programs, and a
  program that defines malloc itself keeps its own allocator;
- at run time, once per allocator, with the loader's own log (LD_DEBUG=bindings):
  every process of the command that resolved `malloc` must have bound it to the
  preloaded library. Anything else (a wrapper that drops the environment, a binary
  whose malloc wins the lookup) means the numbers would not be about the allocator.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..binaries import STT_FUNC, Binary, binary_at
from ..errors import UserError
from .runner import Side, check_runnable

LIBRARY_DIRS = ("/usr/lib/*-linux-gnu", "/lib/*-linux-gnu", "/usr/lib", "/usr/local/lib")
# malloc itself, or the entry points of allocators that programs link in statically
# under their own names (jemalloc as bundled by Rust's jemallocator, mimalloc, ...).
OWN_ALLOCATOR_SYMBOLS = (
    "malloc",
    "je_malloc",
    "_rjem_malloc",
    "mi_malloc",
    "tc_malloc",
    "rpmalloc",
)
BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `malloc'")


@dataclass(frozen=True)
class Allocator:
    name: str
    package: str  # the Debian package that installs it
    sonames: tuple[str, ...]

    def library(self) -> Path | None:
        for pattern in LIBRARY_DIRS:
            for folder in sorted(glob.glob(pattern)):
                for soname in self.sonames:
                    candidate = Path(folder) / soname
                    if candidate.exists():
                        return candidate
        return None


ALLOCATORS = (
    Allocator("mimalloc", "libmimalloc2.0", ("libmimalloc.so.2",)),
    Allocator("jemalloc", "libjemalloc2", ("libjemalloc.so.2",)),
    Allocator("tcmalloc", "libtcmalloc-minimal4", ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4")),
)


def by_names(names: list[str] | None) -> list[Allocator]:
    if not names:
        return list(ALLOCATORS)
    known = {a.name: a for a in ALLOCATORS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(f"unknown allocator {unknown[0]!r}; choose from {', '.join(known)}")
    return [known[n] for n in names]


def install_command(missing: list[Allocator]) -> str:
    return "apt-get install -y " + " ".join(a.package for a in missing)


def refusal(program: str) -> str | None:
    """Why LD_PRELOAD cannot replace the allocator of this program, or None."""
    mode = os.stat(program).st_mode
    if mode & (stat.S_ISUID | stat.S_ISGID):
        return f"{program} is setuid/setgid: the dynamic loader ignores LD_PRELOAD for it"
    binary = binary_at(program)
    if binary is None:
        return None  # a script: the run-time check decides
    if not binary.dynamic:
        return (
            f"{program} is statically linked: there is no dynamic loader to preload "
            "an allocator into; relink it with the allocator instead"
        )
    own = _own_allocator(binary)
    if own:
        return (
            f"{program} defines {own} itself (it has its own allocator), "
            "so a preloaded one would not be used"
        )
    return None


def _own_allocator(binary: Binary) -> str | None:
    """The allocator entry point the program itself defines, if any."""
    defined = {s.name for s in binary.symbols(types=frozenset({STT_FUNC})) if s.defined}
    return next((name for name in OWN_ALLOCATOR_SYMBOLS if name in defined), None)


def preload_env(library: Path) -> dict[str, str]:
    existing = os.environ.get("LD_PRELOAD", "")
    return {"LD_PRELOAD": f"{library}:{existing}" if existing else str(library)}


def verify_preload(argv: list[str], library: Path, cwd: str | None = None) -> str:
    """Run the command once under the loader's log; the proof that malloc went to library.

    Raises UserError saying what happened instead.
    """
    with tempfile.TemporaryDirectory(prefix="perfsleuth-preload-") as tmp:
        env = {
            **os.environ,
            **preload_env(library),
            "LD_DEBUG": "bindings",
            "LD_DEBUG_OUTPUT": f"{tmp}/ld",
        }
        done = subprocess.run(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        bindings = [hit for log in Path(tmp).glob("ld.*") for hit in _malloc_bindings(log)]
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        said = f": {last[0]}" if last else ""
        raise UserError(f"the command exited with status {done.returncode} under it{said}")
    return _judge(bindings, library)


def _malloc_bindings(log: Path) -> list[tuple[str, str]]:
    return BINDING.findall(log.read_text(errors="replace"))


def _judge(bindings: list[tuple[str, str]], library: Path) -> str:
    if not bindings:
        raise UserError(
            "no process of the command looked up malloc through the dynamic loader "
            "(a static or setuid program, or a wrapper that clears the environment?)"
        )
    wanted = os.path.realpath(library)
    elsewhere = [(user, got) for user, got in bindings if os.path.realpath(got) != wanted]
    if elsewhere:
        user, got = elsewhere[0]
        raise UserError(f"malloc of {user} still resolves to {got}, not the preloaded library")
    users = sorted({os.path.basename(user) for user, _ in bindings})
    return f"malloc of {', '.join(users)} bound to {library}"


@dataclass
class Plan:
    sides: list[Side]  # baseline first
    preload_checks: dict[str, str]  # allocator -> proof that the preload took effect
    refused: dict[str, str]  # allocator -> why it is not measured
    missing: list[Allocator]


def plan(argv: list[str], names: list[str] | None = None, cwd: str | None = None) -> Plan:
    """The sides of the experiment, after checking the program and each preload."""
    reason = refusal(check_runnable(Side("baseline", argv, cwd=cwd)))
    if reason:
        raise UserError(f"cannot try allocators: {reason}")
    result = Plan([Side("baseline", argv, cwd=cwd)], {}, {}, [])
    for allocator in by_names(names):
        library = allocator.library()
        if library is None:
            result.missing.append(allocator)
            continue
        try:
            result.preload_checks[allocator.name] = verify_preload(argv, library, cwd)
        except UserError as e:
            result.refused[allocator.name] = str(e)
            continue
        result.sides.append(Side(allocator.name, argv, preload_env(library), cwd))
    return result
