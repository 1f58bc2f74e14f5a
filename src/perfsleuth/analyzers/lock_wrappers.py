"""Lock wrappers: a program's own small functions whose hot path is one pthread lock
or condition-variable call, such as pigz's yarn.c (possess_, release_, twist_,
wait_for_). A wait's call site is the first frame above them (wait_sites.call_site):
named by the wrapper, every lock of the program would be one finding.

A function is a wrapper when (1) in the run, the samples through it (all states) go
on into a lock or condition-variable function, bar MAX_OTHER of them (its own few
instructions, a rare other call), and (2) its machine code is small (its symbol's
size in its binary, MAX_BYTES at most). A function whose binary cannot be read is
not one: the call site stays the function that called the lock. Not an analyzer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..binaries import STT_FUNC, binary_at
from ..model.profile import Frame, Profile
from ..symbols.demangle import demangle_map

LOCK_CALL_PREFIXES = (
    "pthread_mutex_",
    "pthread_cond_",
    "pthread_rwlock_",
    "pthread_spin_",
    "mtx_",
    "cnd_",
)
# yarn.c's wait_for_ (four wait loops) is 167 bytes at gcc -O3; possess_ 48
MAX_BYTES = 512
MAX_OTHER = 0.1  # of the samples through a wrapper: its own code or other calls

Key = tuple[str, str]  # (function, dso)


def lock_wrappers(profile: Profile, own: Callable[[Frame], bool]) -> frozenset[Key]:
    """The (function, dso) of every lock wrapper of the run among the frames that are
    the program's `own` (see the module's doc)."""
    through: dict[Key, float] = defaultdict(float)
    other: dict[Key, float] = defaultdict(float)
    for stack, _weight, count, _t, _state in profile.rows():
        frames = [profile.frames[f] for f in stack]
        seen: set[Key] = set()
        for i, frame in enumerate(frames):
            key = (frame.function, frame.dso)
            if key in seen or not own(frame):
                continue
            seen.add(key)
            through[key] += count
            if i == 0 or not is_lock_call(frames[i - 1]):
                other[key] += count
    paths = {Path(d.get("path", "")).name: d.get("path", "") for d in profile.dsos}
    return frozenset(
        key
        for key, n in through.items()
        if other[key] <= MAX_OTHER * n and _small(paths.get(key[1], ""), key[0])
    )


def is_lock_call(frame: Frame) -> bool:
    """A pthread (or C11) mutex, condition-variable, reader-writer or spin lock call."""
    return not frame.kernel and frame.function.lstrip("_").startswith(LOCK_CALL_PREFIXES)


def _small(path: str, function: str) -> bool:
    size = function_sizes(path).get(function)
    return size is not None and 0 < size <= MAX_BYTES


@lru_cache(maxsize=64)
def function_sizes(path: str) -> dict[str, int]:
    """Function name (C++ names demangled, without their parameters) -> its size in
    bytes, from the binary's symbol tables; {} when it cannot be read."""
    binary = binary_at(path) if path.startswith("/") else None
    if binary is None:
        return {}
    symbols = [s for s in binary.symbols(types=frozenset({STT_FUNC})) if s.defined]
    plain = demangle_map([s.name for s in symbols if s.name.startswith("_Z")])
    return {_without_parameters(plain.get(s.name, s.name)): s.size for s in symbols}


def _without_parameters(name: str) -> str:
    """`ns::Mutex::Lock()` as frames name it: `ns::Mutex::Lock` (also `... const`)."""
    text = name.removesuffix(" const")
    if not text.endswith(")"):
        return name
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return text[:i]
    return name
