"""C++ and Rust symbol demangling through one c++filt process for many names."""

from __future__ import annotations

import shutil
import subprocess


def demangler() -> str | None:
    return (
        shutil.which("c++filt") or shutil.which("llvm-cxxfilt-16") or shutil.which("llvm-cxxfilt")
    )


def demangle_map(names: list[str]) -> dict[str, str]:
    """{mangled: demangled} (GNU style, as perf prints); {} when no demangler runs."""
    tool = demangler()
    if not names or tool is None:
        return {}
    try:
        out = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, check=False
        ).stdout.splitlines()
    except OSError:
        return {}
    if len(out) != len(names):
        return {}
    return dict(zip(names, out, strict=True))


def demangle_all(names: list[str]) -> list[str]:
    """The names demangled, in order; unchanged where no demangler runs."""
    found = demangle_map(names)
    return [found.get(n, n) for n in names]
