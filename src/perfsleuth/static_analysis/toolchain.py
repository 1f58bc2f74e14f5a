"""The compiler that built a unit, and the facts of its flags that decide what an
aliasing fix does: GCC or clang (and its major version), the -O level, and
whether strict aliasing is on.

Where it comes from, best first: the compile database entry's compiler (its first
word, asked for `--version`), the binary's DW_AT_producer ("GNU C++17 12.2.0 -O2
..." or "Debian clang version 16.0.6 ..."), else clang-16, the analysis's own
compiler ("assumed").

Why it matters: with -fno-strict-aliasing (glib, the Linux kernel) every store may
alias, so char8_t changes nothing; GCC at -O2 (its "very cheap" cost model) does not
version a loop for a runtime alias check, so char8_t alone often leaves the loop
scalar where clang vectorises it; and a `__restrict` local made GCC's code slower.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .source import TranslationUnit

CLANG_PRODUCER = re.compile(r"clang version (?P<major>\d+)\.")
GCC_PRODUCER = re.compile(r"^GNU \S+ (?P<major>\d+)\.")
GCC_VERSION = re.compile(r"^\S*(?:g\+\+|gcc|c\+\+|cc)\S* \(.*\) (?P<major>\d+)\.", re.M)
VERSION_TIMEOUT_S = 20
ANALYSIS_CLANG = "16"
# (family, C++?) -> driver name
DRIVERS = {
    ("gcc", True): "g++",
    ("gcc", False): "gcc",
    ("clang", True): "clang++",
    ("clang", False): "clang",
}


@dataclass(frozen=True)
class Toolchain:
    """Who compiled the unit and how."""

    family: str  # "gcc" or "clang"
    major: str  # "12", "16"; "" when unknown
    origin: str  # "compile_commands.json", "DW_AT_producer" or "assumed"
    opt_level: str  # the last -O flag, "-O0" when there is none
    strict_aliasing: bool  # False with -fno-strict-aliasing, or below -O2 with GCC

    @property
    def name(self) -> str:
        label = "GCC" if self.family == "gcc" else "clang"
        return f"{label} {self.major}".strip()

    @property
    def versions_loops(self) -> bool:
        """Does the vectoriser add a runtime alias check at these flags? GCC's
        "very cheap" cost model, its default at -O2 since GCC 12, does not."""
        return self.family == "clang" or self.opt_level in ("-O3", "-Ofast")

    def describe(self) -> str:
        aliasing = "" if self.strict_aliasing else " -fno-strict-aliasing"
        return f"{self.name} {self.opt_level}{aliasing} (from {self.origin})"

    def driver(self, cxx: bool) -> str | None:
        """The installed driver of this compiler and major version, else of its family."""
        base = DRIVERS[(self.family, cxx)]
        names = [f"{base}-{self.major}", base] if self.major else [base]
        if self.family == "clang":
            names.append(f"{base}-{ANALYSIS_CLANG}")
        return next((found for name in names if (found := shutil.which(name))), None)


def toolchain_of(unit: TranslationUnit) -> Toolchain:
    """The compiler and the aliasing-relevant flags that built the unit."""
    family, major, origin = _compiler_named(unit.compiler)
    if not family and unit.producer:
        family, major = _from_producer(unit.producer)
        origin = "DW_AT_producer" if family else ""
    if not family:
        family, major, origin = "clang", ANALYSIS_CLANG, "assumed"
    level = _opt_level(unit.flags)
    strict = _strict_aliasing(unit.flags, family, level)
    return Toolchain(family, major, origin, level, strict)


def _compiler_named(compiler: str) -> tuple[str, str, str]:
    if not compiler:
        return "", "", ""
    family, major = _identify(compiler)
    return family, major, ("compile_commands.json" if family else "")


@functools.cache
def _identify(compiler: str) -> tuple[str, str]:
    """(family, major) of a compiler command, from its `--version`; ("", "") when it
    cannot be run (a cross compiler not installed here: then the producer decides)."""
    found = shutil.which(compiler) or (compiler if Path(compiler).is_file() else None)
    if found is None:
        return _by_name(Path(compiler).name)
    try:
        done = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return _by_name(Path(compiler).name)
    clang = CLANG_PRODUCER.search(done.stdout)
    if clang:
        return "clang", clang["major"]
    gcc = GCC_VERSION.search(done.stdout)
    return ("gcc", gcc["major"]) if gcc else _by_name(Path(compiler).name)


def _by_name(name: str) -> tuple[str, str]:
    digits = re.search(r"-(\d+)$", name)
    major = digits[1] if digits else ""
    if "clang" in name:
        return "clang", major
    if re.search(r"(?:^|-)(?:g\+\+|gcc)(?:-\d+)?$", name):
        return "gcc", major
    return "", ""


def _from_producer(producer: str) -> tuple[str, str]:
    clang = CLANG_PRODUCER.search(producer)
    if clang:
        return "clang", clang["major"]
    gcc = GCC_PRODUCER.match(producer)
    return ("gcc", gcc["major"]) if gcc else ("", "")


def _opt_level(flags: list[str]) -> str:
    levels = [f for f in flags if re.fullmatch(r"-O(?:\d|s|z|fast|g)?", f)]
    if not levels:
        return "-O0"
    return "-O1" if levels[-1] == "-O" else levels[-1]


def _strict_aliasing(flags: list[str], family: str, level: str) -> bool:
    """GCC enables -fstrict-aliasing at -O2 and above; clang always. An explicit
    -f(no-)strict-aliasing, the last one, wins."""
    explicit = [f for f in flags if f in ("-fstrict-aliasing", "-fno-strict-aliasing")]
    if explicit:
        return explicit[-1] == "-fstrict-aliasing"
    return family == "clang" or level not in ("-O0", "-O1", "-Og")
