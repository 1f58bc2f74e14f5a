"""C++ and Rust symbol demangling through one c++filt process for many names."""

from __future__ import annotations

import re
import shutil
import subprocess

RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")  # a Rust legacy symbol's hash, which valgrind drops


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


def valgrind_names(names: list[str]) -> dict[str, str]:
    """{symbol: the name valgrind gives it}: a C++ or Rust symbol demangled (Rust's
    legacy hash `::h0123456789abcdef` dropped, as valgrind drops it), others as they are."""
    mangled = [n for n in names if n.startswith(("_Z", "_R"))]
    found = demangle_map(mangled)
    return {n: RUST_HASH.sub("", found.get(n, n)) for n in names}
