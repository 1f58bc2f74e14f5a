"""A unit's flags as clang-16 takes them.

A compile database written by a GCC build carries options only GCC has (bitcoin's
`-fno-extended-identifiers` and `-fstack-reuse=none`), and clang's driver refuses
those outright, so the unit would count as one that does not compile. The analysis
drops exactly the options clang's own driver names as refused, asked once per
distinct set of flags (`clang -###` parses the command line and compiles nothing).
GCC-only warnings are not among them: `-Wno-unknown-warning-option` quiets those.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Sequence

# "unknown argument: 'X'", "unknown argument 'X'; did you mean 'Y'?", "unsupported option
# 'X'", and "unsupported argument 'V' to option '-O='" (the flag was -O=V)
REFUSED = re.compile(
    r"error: (?:unsupported option '([^']+)'|unknown argument:? '([^']+)'"
    r"|unsupported argument '([^']*)' to option '([^']+)')"
)
DRIVER_TIMEOUT_S = 60


def clang_accepted(flags: Sequence[str], cxx: bool) -> list[str]:
    """`flags` without the options clang-16's driver refuses."""
    refused = _refused(tuple(flags), cxx)
    return [f for f in flags if f not in refused]


@functools.lru_cache(maxsize=512)
def _refused(flags: tuple[str, ...], cxx: bool) -> frozenset[str]:
    name = "clang++-16" if cxx else "clang-16"
    driver = shutil.which(name) or shutil.which(name.removesuffix("-16"))
    if driver is None:
        return frozenset()  # the compile that needs clang says what to install
    argv = [driver, "-###", "-fsyntax-only", *flags, "-x", "c++" if cxx else "c", "/dev/null"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return frozenset()
    return frozenset(
        a or b or option + value for a, b, value, option in REFUSED.findall(done.stderr)
    )
