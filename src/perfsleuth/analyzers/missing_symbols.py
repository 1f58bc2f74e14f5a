"""Missing symbols and broken stacks: when the profile itself cannot be trusted.

Samples whose leaf has no function name hide where the time goes, and stacks
that stop before reaching a thread's entry point hide who called it. Either,
when large, is reported first (rank.py puts this kind ahead), with the fix for
each DSO: debug packages or debuginfod for system libraries, -g for the user's
own binaries, frame pointers or DWARF unwinding for broken stacks.

Nameless code that symbols cannot name is said as what it is: JIT-compiled or
anonymous executable memory (PCRE2's JIT, V8, LuaJIT, the JVM: the jit.anonymous
cost class's DSOs) and code whose mapping the recording lost (a recording problem,
said once). Missing names are a confident finding only where they hide the time
(`blind_share` >= 20%); else one line at the bottom. Broken stacks never go first:
they undercount callers, but the hot code is still named.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict

from ..binaries import elf_info
from ..model.findings import Finding
from ..model.profile import EXACT_UNITS, Frame, Profile
from ..rules import load_classes, load_rules
from ..symbols.missing import symbols_fix, unknown_frames
from . import Context
from .hot_library import hot_libraries
from .library_match import heaviest, switch_out_frames

MIN_UNKNOWN_SHARE = 0.05
MIN_BROKEN_SHARE = 0.25
HIGH_CONFIDENCE_SHARE = 0.2
LOW_CONFIDENCE = 0.3  # names missing where little of the time is: a line under the findings
LOST_MAPPINGS = ("", "[unknown]")  # perf saw no mmap for the address
# Where programs and threads start, per runtime. A stack with one of these on it
# reached its entry: any frames above it belong to the runtime, not to the user.
ENTRY_CHAINS = {
    "C runtime and loader": r"_start|__libc_start_main(_impl|_alias_2)?|__libc_start_call_main"
    r"|_dl_start(_user)?|main",
    "threads (glibc, clone)": r"start_thread|thread_start|__?clone3?|__GI___clone3?",
    "Rust": r"std::rt::lang_start(_internal)?\b.*|(std::.*::)?__rust_begin_short_backtrace\b.*"
    r"|std::sys::.*::thread_start|[A-Za-z_]\w*::main",
    "C++ runtimes": r"execute_native_thread_routine(_compat)?"
    r"|std::thread::_State_impl<.*>::_M_run.*|gomp_thread_start|__kmp_launch_worker.*"
    r"|tbb::.*::thread_routine.*|g_thread_proxy|boost::.*thread_proxy.*",
    "Go": r"runtime\.(goexit|rt0_go|mstart)(\.abi0)?",
}
ENTRY_FUNCTIONS = re.compile("^(" + "|".join(ENTRY_CHAINS.values()) + ")$")
# A stripped executable's _start has no name; its frame is "[unknown] DSO+0xSTART"
# with START at the ELF entry point (the call into libc comes a few bytes later).
_UNNAMED_START = re.compile(r"^\[unknown\] (?P<dso>.+)\+0x(?P<start>[0-9a-f]+)$")
NEAR_ENTRY_BYTES = 64
# valgrind's name for code in no file (its own trampolines): no symbols name it
VALGRIND_UNPLACED = "???"
# a DSO's fix is said from this share of the run (the loader's 0.0% asked for libc6-dbgsym)
FIX_SHARE = 0.01
# The dynamic loader runs the program's start-up (relocation, library loading) before
# any _start of the executable: a stack whose frames are in it is at its beginning.
LOADERS = re.compile(r"^ld(-linux[-\w]*)?\.so")
# Stacks rebuilt from an exact call graph (callgrind, cachegrind) are not
# unwound, so they cannot be broken; their roots are whatever valgrind saw first.
# py-spy rebuilds stacks from the interpreter's frames and drops its entry frames.
UNWOUND_FORMATS = frozenset({"callgrind", "cachegrind", "lackey", "py-spy"})
DWARF_STACK_COPY = "8 KB"  # perf record --call-graph dwarf's default stack copy per sample


def analyze(ctx: Context) -> list[Finding]:
    profile = ctx.profile
    total = profile.total
    if total <= 0:
        return []
    paths = {os.path.basename(b.get("path", "")): b.get("path", "") for b in ctx.binaries}
    unknown_by_dso, broken, broken_off_cpu = _measure(profile, _entry_frames(profile, paths))
    findings = []
    generated = _generated_code(unknown_by_dso)
    fixable = {d: w for d, w in unknown_by_dso.items() if d not in generated}
    if sum(fixable.values()) / total >= MIN_UNKNOWN_SHARE:
        blind = _blind_share(ctx, fixable, total)
        counted = "of the instructions" if profile.unit in EXACT_UNITS else "of samples"
        findings.append(_unknown_finding(fixable, total, paths, blind, counted))
        findings[-1].evidence.extend(_generated_lines(unknown_by_dso, generated, total))
    elif sum(unknown_by_dso.values()) / total >= MIN_UNKNOWN_SHARE:
        findings.append(_generated_finding(unknown_by_dso, generated, total))
    unwound = profile.meta.get("format") not in UNWOUND_FORMATS
    if unwound and broken / total >= MIN_BROKEN_SHARE:
        findings.append(_broken_finding(ctx, broken / total, broken_off_cpu / broken))
    return findings


def _entry_frames(profile: Profile, paths: dict[str, str]) -> set[int]:
    """Ids of the frames where a program or a thread starts."""
    return {
        i
        for i, frame in enumerate(profile.frames)
        if not frame.kernel
        and (
            ENTRY_FUNCTIONS.match(frame.function)
            or LOADERS.match(frame.dso)
            or _is_unnamed_start(frame, paths)
        )
    }


def _is_unnamed_start(frame: Frame, paths: dict[str, str]) -> bool:
    """A nameless frame at its executable's ELF entry point (a stripped _start)."""
    m = _UNNAMED_START.match(frame.function)
    info = elf_info(paths.get(m["dso"], "")) if m else None
    if m is None or info is None or not info.entry:
        return False
    return 0 <= int(m["start"], 16) - info.entry < NEAR_ENTRY_BYTES


def _measure(profile: Profile, entries: set[int]) -> tuple[dict[str, float], float, float]:
    """Unknown-leaf weight per DSO, the weight of user stacks that reach no entry, and
    of those the weight taken off the CPU (SWITCH_OUT)."""
    unknown: dict[str, float] = defaultdict(float)
    broken = broken_off_cpu = 0.0
    switch_out = switch_out_frames(profile)  # eBPF's stacks: frame-pointer walks
    nameless = unknown_frames(profile.frames)
    for stack, weight, _count, _thread, _state in profile.rows():
        if not stack:
            continue
        if nameless[stack[0]]:
            unknown[profile.frames[stack[0]].dso or "[unknown]"] += weight
        if not profile.frames[stack[-1]].kernel and entries.isdisjoint(stack):
            broken += weight
            broken_off_cpu += 0.0 if switch_out.isdisjoint(stack) else weight
    return unknown, broken, broken_off_cpu


def _generated_code(by_dso: dict[str, float]) -> dict[str, str]:
    """Nameless DSOs no symbols can name -> what they are (JIT code or a lost mapping)."""
    jit = next(c for c in load_classes() if c.id == "jit.anonymous")
    found = {}
    for dso in by_dso:
        if dso in LOST_MAPPINGS:
            found[dso] = "lost"
        elif any(p.search(dso) for p in jit.dsos):
            found[dso] = "jit"
    return found


GENERATED_TEXT = {
    "jit": "{share} of samples are in JIT-compiled or anonymous executable code ({dsos}: "
    "PCRE2's JIT, V8, LuaJIT, the JVM...): generated at run time, no -g names it; the "
    "runtime's perf map does (node --perf-basic-prof, the JVM's -XX:+DumpPerfMapAtExit)",
    "lost": "{share} of samples are in code whose mapping the recording lost (perf saw no "
    "mmap for it): a recording problem, not missing debug info; recording again usually "
    "names it",
}


def _generated_lines(
    by_dso: dict[str, float], generated: dict[str, str], total: float
) -> list[str]:
    """One line per kind of nameless code symbols cannot name."""
    lines = []
    for what, text in GENERATED_TEXT.items():
        dsos = [d for d, w in generated.items() if w == what]
        weight = sum(by_dso[d] for d in dsos)
        if weight:
            share = f"{100 * weight / total:.1f}%"
            lines.append(text.format(share=share, dsos=", ".join(d or "?" for d in dsos)))
    return lines


def _generated_finding(
    by_dso: dict[str, float], generated: dict[str, str], total: float
) -> Finding:
    """Nameless code that is JIT output or lost mappings: what it is, said once."""
    lines = _generated_lines(by_dso, generated, total)
    share = sum(by_dso[d] for d in generated) / total
    jit = any(w == "jit" for w in generated.values())
    return Finding(
        rule="symbols.generated-code",
        kind="missing-symbols",
        title=f"{100 * share:.1f}% of samples are in "
        + ("JIT-compiled or anonymous code" if jit else "code whose mapping was lost"),
        share=share,
        estimated_gain=0.0,
        confidence=LOW_CONFIDENCE,
        suggestion=lines[0][0].upper() + lines[0][1:],
        evidence=lines,
        details={"blind_share": 0.0},
    )


def _unknown_finding(
    by_dso: dict[str, float],
    total: float,
    paths: dict[str, str],
    blind: float,
    counted: str = "of samples",
) -> Finding:
    """`counted`: what the shares are of (a count run's instructions, or samples)."""
    share = sum(by_dso.values()) / total
    evidence = []
    fixes: list[str] = []
    for dso, weight in heaviest(by_dso, 5):
        evidence.append(f"{dso}: {100 * weight / total:.1f}% {counted} have no function name")
        if dso != VALGRIND_UNPLACED and (not fixes or weight >= FIX_SHARE * total):
            fixes.append(symbols_fix(dso, _path_of(dso, paths)))
    top_dso = heaviest(by_dso, 1)[0][0]
    return Finding(
        rule="symbols.missing",
        kind="missing-symbols",
        title=f"{100 * share:.1f}% {counted} have no function name (mostly in {top_dso})",
        share=share,
        estimated_gain=0.0,
        confidence=0.9 if blind >= HIGH_CONFIDENCE_SHARE else LOW_CONFIDENCE,
        suggestion="Get symbols before trusting the ranking: " + "; ".join(dict.fromkeys(fixes)),
        dso=top_dso,
        evidence=evidence,
        fix={"steps": list(dict.fromkeys(fixes))},
        details={"blind_share": blind},
    )


def _path_of(dso: str, paths: dict[str, str]) -> str:
    """A DSO's file: a count run names it by its whole path (callgrind's), a sampled
    run by its file name, found among the run's binaries (stripped or system: the fix
    differs; a whole path looked up by file name found nothing: "rebuild with -g")."""
    return dso if dso.startswith("/") else paths.get(dso, "")


def _blind_share(ctx: Context, by_dso: dict[str, float], total: float) -> float:
    """The share of nameless samples whose DSO does not say what they are.

    A library rule that names a DSO (liblzma, libz, ...) still matches its nameless
    frames, and a hot library (hot_library: libz3 taking half the run) is named and
    sized by its file, so the ranking of those libraries stands; rank.py puts the
    finding first only when this share is large.
    """
    rules = ctx.options.rules or load_rules()
    named = {d for d in by_dso if any(p.search(d) for rule in rules for p in rule.dsos)}
    named |= {lib.dso for lib in hot_libraries(ctx.profile, rules)}
    return sum(w for d, w in by_dso.items() if d not in named) / total


def _broken_finding(ctx: Context, share: float, off_cpu: float) -> Finding:
    """off_cpu: the part of the broken weight in stacks taken off the CPU."""
    # recorded runs say it in the run; imported perf.data in the profile
    call_graph = ctx.run.meta.get("call_graph") or ctx.profile.meta.get("call_graph", "")
    reason = ctx.run.meta.get("call_graph_reason", "")
    evidence = [
        f"{100 * share:.1f}% of user-space stacks reach no program or thread entry "
        f"({', '.join(ENTRY_CHAINS)})",
        f"recorded with call graph: {call_graph or 'unknown'}" + (f" ({reason})" if reason else ""),
    ]
    title = f"{100 * share:.1f}% of samples have stacks that stop before the thread's entry"
    confidence = 0.6
    if call_graph == "fp":
        fix = "record with --call-graph dwarf, or rebuild with -fno-omit-frame-pointer"
    else:
        fix = "rebuild with -fno-omit-frame-pointer and record with --call-graph fp"
    if off_cpu >= 0.5:
        # eBPF's walk of frame pointers stops in the first library built without them
        title += " (the waits' stacks: eBPF follows frame pointers, libc and libstdc++ keep none)"
        confidence = 0.4
        fix = "`perfsleuth record --mode wall` unwinds the waits with DWARF"
        evidence.append(f"{100 * off_cpu:.0f}% of them were taken as the thread left the CPU")
    elif call_graph == "dwarf":
        # DWARF unwinding is exact up to the end of the stack copy: the hot code and
        # its nearest callers are there, only the outermost frames are cut.
        title += f" (deeper than perf's {DWARF_STACK_COPY} stack copy)"
        confidence = 0.4
        evidence.append(
            f"perf copies {DWARF_STACK_COPY} of stack per sample for DWARF unwinding: "
            "the leaf and its nearest callers are exact, callers further up are lost"
        )
    return Finding(
        rule="symbols.broken-stacks",
        kind="missing-symbols",
        title=title,
        share=share,
        estimated_gain=0.0,
        confidence=confidence,
        suggestion=f"Inclusive costs and call sites are undercounted; {fix}",
        evidence=evidence,
        fix={"steps": [fix]},
        # the hot code is still named, so it never goes before the findings about it
        details={"blind_share": 0.0},
    )
