"""Hot shared libraries: a dependency that holds much of the time, named and sized.

A library such as libz3 that takes half of a run is the next lever whether or not
its functions have names. Debian strips its libraries, so a profile shows most of
such a library's frames without a name; that is not blindness about *where* the
time goes (the file says it), only about which of its functions. So the finding
says how much of the time the library holds, how to name its functions (its debug
package, debuginfod, a build from source with -g) and what helps without touching
its code: a build of it with PGO and LTO, tried with `perfsleuth try build
--dependency`. Its time ranks it like any other finding; missing_symbols leaves the
names it hides out of its "the ranking is blind" share.

Runtime libraries that other rules cover (libc's allocator and string functions,
libstdc++'s containers, compression libraries named by their DSO) are left to them, and
so are a packaged program's own packaged libraries: `clang++-16` spends its time in
libclang-cpp and libLLVM, which are clang, not a dependency its user chose or builds.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..binaries.packaged import is_packaged
from ..model.findings import Finding
from ..model.profile import Frame, Profile
from ..rules import Rule, load_rules
from ..symbols.missing import symbols_fix, unknown_frames
from . import Context
from .library_match import heaviest
from .packaged_programs import SHARED_OBJECT, packaged_threads

MIN_SHARE = 0.10
ALL_NAMED = 0.02  # nameless below this part of a library: its functions are named
# PGO + LTO of the library itself: the K2 case in the reference texts rebuilt Z3
# (44-46% of K2's time) with both and gained 1.1x on average (1.0x-1.17x), i.e.
# about a fifth of the library's time; 5-20% of a whole program is the usual range.
PGO_LTO_SAVING = 0.2
PGO_LTO_RANGE = (0.0, 0.35)
SAVING_SOURCE = (
    "K2 case in the reference texts: PGO+LTO of Z3, ~46% of K2's time, gave 1.10x on "
    "average (1.00x-1.17x), about 20% of the library's time"
)
CONFIDENCE = 0.5
ENTRY_POINTS = 3
# The C and C++ runtimes, the loader and the language runtimes (CPython, the JVM): their
# hot spots have rules of their own.
RUNTIMES = re.compile(
    r"^(libc|libm|libmvec|libstdc\+\+|libc\+\+|libc\+\+abi|libgcc_s|libpthread|libdl|librt"
    r"|ld-linux[-\w]*|linux-vdso|libpython\d[\d.]*\w*|libjvm)\.so"
)


@dataclass(frozen=True)
class HotLibrary:
    dso: str
    weight: float  # self time in the library
    nameless: float  # the part of it in frames without a function name
    entries: dict[str, float]  # its named functions the program entered it through -> time
    threads: frozenset[int] = frozenset()  # the profile's threads with time in it


def analyze(ctx: Context) -> list[Finding]:
    total = ctx.profile.total
    if total <= 0:
        return []
    paths = {os.path.basename(b.get("path", "")): b.get("path", "") for b in ctx.binaries}
    rules = ctx.options.rules or load_rules()
    packaged = packaged_threads(ctx)
    return [
        _finding(lib, total, paths.get(lib.dso, ""), ctx.run.command or "CMD")
        for lib in hot_libraries(ctx.profile, rules)
        if not (
            is_packaged(paths.get(lib.dso) or lib.dso) and lib.threads and lib.threads <= packaged
        )
    ]


def hot_libraries(profile: Profile, rules: Sequence[Rule]) -> list[HotLibrary]:
    """Shared libraries, not runtimes and not named by a rule, holding MIN_SHARE or more
    of the time in their own code; heaviest first."""
    weight: dict[str, float] = defaultdict(float)
    nameless: dict[str, float] = defaultdict(float)
    entries: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    threads: dict[str, set[int]] = defaultdict(set)
    frames = profile.frames
    unknown = unknown_frames(frames)
    for stack, w, _count, thread, _state in profile.rows():
        leaf_id = next((f for f in stack if not frames[f].inlined), None)
        if leaf_id is None or frames[leaf_id].kernel:
            continue
        dso = frames[leaf_id].dso
        weight[dso] += w
        threads[dso].add(thread)
        if unknown[leaf_id]:
            nameless[dso] += w
        entry = _entry(frames, unknown, stack, dso)
        if entry:
            entries[dso][entry] += w
    found = [
        HotLibrary(dso, w, nameless[dso], dict(entries[dso]), frozenset(threads[dso]))
        for dso, w in weight.items()
        if w / profile.total >= MIN_SHARE and _is_dependency(dso, rules)
    ]
    return sorted(found, key=lambda lib: (-lib.weight, lib.dso))


def _entry(frames: list[Frame], unknown: list[bool], stack: tuple[int, ...], dso: str) -> str:
    """The outermost named frame of the library's run of frames from the leaf up: the
    exported function the program called (a stripped library keeps those names)."""
    named = ""
    for fid in stack:
        frame = frames[fid]
        if frame.dso != dso:
            break
        if not unknown[fid]:
            named = frame.function
    return named


def _is_dependency(dso: str, rules: Sequence[Rule]) -> bool:
    """A shared library the program depends on, by its file name: a count run names
    DSOs by their whole path (callgrind's object names), a sampled run by file name."""
    if not SHARED_OBJECT.search(dso) or RUNTIMES.match(os.path.basename(dso)):
        return False
    patterns = [p for rule in rules for p in (*rule.dsos, *rule.exclude_dsos)]
    return not any(p.search(dso) for p in patterns)


def _named(unnamed: float) -> str:
    """How much of the library's time has function names (Debian's libsqlite3, 28% of
    its time without a name, was said to have its functions named)."""
    if unnamed < ALL_NAMED:
        return "its functions are named"
    return f"function names for {100 * (1 - unnamed):.0f}% of it"


def _finding(lib: HotLibrary, total: float, path: str, command: str) -> Finding:
    share = lib.weight / total
    unnamed = lib.nameless / lib.weight
    name = os.path.basename(lib.dso).split(".so", 1)[0]
    symbols = symbols_fix(lib.dso, path) if unnamed >= 0.5 else ""
    names = f"no symbols for {100 * unnamed:.0f}% of it" if symbols else _named(unnamed)
    try_it = (
        f"perfsleuth try build --dependency {os.path.basename(lib.dso)} "
        f"--build 'BUILD {name} FROM SOURCE INTO $OUT' -- {command}"
    )
    evidence = [
        f"{100 * share:.1f}% of CPU time runs in {lib.dso}'s own code"
        + (f" ({path})" if path else ""),
        f"{100 * lib.nameless / total:.1f}% of CPU time is in its frames without a function name",
    ]
    evidence += [
        f"entered through {function}: {100 * w / total:.1f}% of CPU time"
        for function, w in heaviest(lib.entries, ENTRY_POINTS)
    ]
    steps = [f"name its functions: {symbols}"] if symbols else []
    steps.append(f"build {name} from source with PGO and LTO and measure it: {try_it}")
    return Finding(
        rule="library.hot",
        kind="hot-library",
        title=f"{100 * share:.1f}% of CPU time is in {lib.dso} ({names})",
        share=share,
        estimated_gain=share * PGO_LTO_SAVING,
        gain_low=share * PGO_LTO_RANGE[0],
        gain_high=share * PGO_LTO_RANGE[1],
        gain_basis=SAVING_SOURCE,
        confidence=CONFIDENCE,
        suggestion=(
            f"{lib.dso} is where {100 * share:.0f}% of the time goes"
            + (f"; to see which of its functions, {symbols}" if symbols else "")
            + f". A PGO+LTO build of {name} is the next lever (no code change in it): "
            f"{try_it}. Calling it less often (fewer or cheaper requests) saves more"
        ),
        dso=lib.dso,
        evidence=evidence,
        fix={"steps": steps},
        details={
            "nameless_share": lib.nameless / total,
            "saving": PGO_LTO_SAVING,
            "saving_range": list(PGO_LTO_RANGE),
            "code_change": False,
        },
    )
