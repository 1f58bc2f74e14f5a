"""Missing symbols and broken stacks: when the profile itself cannot be trusted.

Samples whose leaf has no function name hide where the time goes, and stacks
that stop before reaching a thread's entry point hide who called it. Either,
when large, is reported first (rank.py puts this kind ahead), with the fix for
each DSO: debug packages or debuginfod for system libraries, -g for the user's
own binaries, frame pointers or DWARF unwinding for broken stacks.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import defaultdict
from functools import lru_cache

from ..model.findings import Finding
from ..model.profile import Frame, Profile
from ..symbols.elf import elf_info
from . import Context
from .library_match import heaviest

MIN_UNKNOWN_SHARE = 0.05
MIN_BROKEN_SHARE = 0.25
HIGH_CONFIDENCE_SHARE = 0.2
ROOT_FUNCTIONS = re.compile(
    r"^(_start|__libc_start_main|__libc_start_call_main|start_thread|clone3?|__clone3?|"
    r"_dl_start_user|_dl_start|main|thread_start|__GI___clone3?)$"
)
SYSTEM_PREFIXES = ("/usr/", "/lib")
# Stacks rebuilt from an exact call graph (callgrind, cachegrind) are not
# unwound, so they cannot be broken; their roots are whatever valgrind saw first.
# py-spy rebuilds stacks from the interpreter's frames and drops its entry frames.
UNWOUND_FORMATS = frozenset({"callgrind", "cachegrind", "lackey", "py-spy"})
_ADDRESS = re.compile(r"^(0x)?[0-9a-f]{6,}$")


def analyze(ctx: Context) -> list[Finding]:
    profile = ctx.profile
    total = profile.total
    if total <= 0:
        return []
    unknown_by_dso, broken = _measure(profile)
    findings = []
    unknown = sum(unknown_by_dso.values())
    if unknown / total >= MIN_UNKNOWN_SHARE:
        findings.append(_unknown_finding(ctx, unknown_by_dso, total))
    unwound = profile.meta.get("format") not in UNWOUND_FORMATS
    if unwound and broken / total >= MIN_BROKEN_SHARE:
        findings.append(_broken_finding(ctx, broken / total))
    return findings


def is_unknown(frame: Frame) -> bool:
    name = frame.function
    return not name or name.startswith("[unknown") or bool(_ADDRESS.match(name))


def _measure(profile: Profile) -> tuple[dict[str, float], float]:
    """Unknown-leaf weight per DSO, and the weight of user stacks cut short."""
    unknown: dict[str, float] = defaultdict(float)
    broken = 0.0
    for stack, weight, _count, _thread, _state in profile.rows():
        if not stack:
            continue
        leaf = profile.frames[stack[0]]
        if is_unknown(leaf):
            unknown[leaf.dso or "[unknown]"] += weight
        root = profile.frames[stack[-1]]
        if not root.kernel and not ROOT_FUNCTIONS.match(root.function):
            broken += weight
    return unknown, broken


def _unknown_finding(ctx: Context, by_dso: dict[str, float], total: float) -> Finding:
    share = sum(by_dso.values()) / total
    paths = {os.path.basename(b.get("path", "")): b.get("path", "") for b in ctx.binaries}
    evidence = []
    fixes = []
    for dso, weight in heaviest(by_dso, 5):
        evidence.append(f"{dso}: {100 * weight / total:.1f}% of samples have no function name")
        fixes.append(_fix_for(dso, paths.get(dso, "")))
    top_dso = heaviest(by_dso, 1)[0][0]
    return Finding(
        rule="symbols.missing",
        kind="missing-symbols",
        title=f"{100 * share:.1f}% of samples have no function name (mostly in {top_dso})",
        share=share,
        estimated_gain=0.0,
        confidence=0.9 if share >= HIGH_CONFIDENCE_SHARE else 0.6,
        suggestion="Get symbols before trusting the ranking: " + "; ".join(dict.fromkeys(fixes)),
        dso=top_dso,
        evidence=evidence,
        fix={"steps": list(dict.fromkeys(fixes))},
    )


def _fix_for(dso: str, path: str) -> str:
    if path.startswith(SYSTEM_PREFIXES):
        package = owning_package(path)
        debug = (
            f"apt-get install {package}-dbgsym (from the debian-debug archive)" if package else ""
        )
        via = "set DEBUGINFOD_URLS=https://debuginfod.debian.net"
        return f"{dso}: {debug + ' or ' if debug else ''}{via}"
    info = elf_info(path) if path else None
    if info is not None and not info.has_symbols:
        return f"{dso}: stripped; rebuild or relink without -s / strip, and with -g"
    return f"{dso}: rebuild with -g (names and file:line come from the debug info)"


@lru_cache(maxsize=64)
def owning_package(path: str) -> str:
    """The Debian package that installed a file ('' when unknown)."""
    real = os.path.realpath(path)
    # Merged /usr: dpkg may know the file by its /lib name.
    candidates = dict.fromkeys([path, real, real.removeprefix("/usr")])
    try:
        out = subprocess.run(
            ["dpkg-query", "-S", *candidates],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    first = out.split(":", 1)[0].strip() if out else ""
    return first if first and " " not in first else ""


def _broken_finding(ctx: Context, share: float) -> Finding:
    call_graph = ctx.run.meta.get("call_graph", "")
    if call_graph == "fp":
        fix = "record with --call-graph dwarf, or rebuild with -fno-omit-frame-pointer"
    else:
        fix = "rebuild with -fno-omit-frame-pointer and record with --call-graph fp"
    return Finding(
        rule="symbols.broken-stacks",
        kind="missing-symbols",
        title=f"{100 * share:.1f}% of samples have stacks that stop before the thread's entry",
        share=share,
        estimated_gain=0.0,
        confidence=0.6,
        suggestion=f"Inclusive costs and call sites are undercounted; {fix}",
        evidence=[
            f"{100 * share:.1f}% of user-space stacks do not reach main/_start/start_thread",
            f"recorded with call graph: {call_graph or 'unknown'}",
        ],
        fix={"steps": [fix]},
    )
