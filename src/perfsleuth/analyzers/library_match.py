"""Library matching: hot symbols and DSOs with known faster replacements.

Rules are data (rules/library.toml plus the user's files). For each rule the
share is the weight of the samples with a matching frame anywhere on the stack,
each sample counted once (inclusive, no double counting); the self share counts
matching leaf frames. A rule with `scope = "self"` matches the leaf frame only
(time spent in the code itself: the interpreter's own work), and one with
`source_nodes` only frames whose Python source line has that shape
(static_analysis/python_source.py). Findings point at the user's code that calls into the
matched library the most (a Python frame over the C module frames below it), and
name the heaviest call sites, so the fix lands at a file:line. A count run's matches
are read from its counted calls (counted_match): the library's own code, the user's
functions it calls back said apart, and its direct callers.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..collect.run_facts import is_own_command
from ..formats.py_spy import is_library_file
from ..model.counts import NO_SOURCE, ExactCounts, merged_name
from ..model.findings import Finding
from ..model.profile import Frame, Profile, is_python_frame
from ..model.states import RUNNABLE_IN_FUTEX
from ..rules import Rule, load_rules, with_evidence
from ..static_analysis.python_source import PythonLines
from ..symbols.names import elide_templates
from ..views.annotate import find_source
from . import Context
from .packaged_programs import note_packaged_code, packaged_run

LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/lib/x86_64-linux-gnu",
)
# CPython itself: a build with debug info (pyenv's) gives its C frames a file outside
# /usr, yet they are never the user's code
CPYTHON_DSO = re.compile(r"^(libpython\d\.\d+\S*\.so[.\d]*|python\d(\.\d+)?)$")
# sources that are never the user's: system headers and libraries, glibc's build
# paths, Rust's standard library and the crates cargo downloaded
NOT_USER_FILES = ("./", "/usr/", "/build/", "/rustc/")
NOT_USER_DIRS = ("/.cargo/registry/", "/.rustup/")
# Below this many matching samples a share is too noisy to trust fully.
STEADY_SAMPLES = 50
EVIDENCE_FUNCTIONS = 4
CALL_SITES = 3
ON_CPU_STATES = ("", "running")
# Recorders whose profiles hold no time on the CPU (offcpu mode's blocks): their
# "running" is a thread preempted, waiting for a CPU, not CPU time spent in its code.
OFF_CPU_RECORDERS = ("bpftrace", "perf-sched")
# A stack through the kernel's scheduler was taken as its thread left the CPU (eBPF's,
# in offcpu and all modes): a "running" one is a thread preempted, off the CPU
SWITCH_OUT = frozenset(("__schedule", "schedule"))
OVERLAP_NOTED = 0.02
C_SOURCES = (".c",)  # a call site in these is C code, without C++'s library
# A thread with this part of a match's time or more is one it runs on (a thread that
# touched the library once does not make it parallel).
PARALLEL_PART = 0.1
K = TypeVar("K")


@dataclass
class Match:
    """What one rule matched in a profile, weights in the profile's unit."""

    inclusive: float = 0.0
    self: float = 0.0
    samples: int = 0
    self_by_function: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    inclusive_by_function: defaultdict[str, float] = field(
        default_factory=lambda: defaultdict(float)
    )
    dsos: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    call_sites: defaultdict[Frame, float] = field(default_factory=lambda: defaultdict(float))
    # weight per thread of the profile (-1: a sample without one)
    by_thread: defaultdict[int, float] = field(default_factory=lambda: defaultdict(float))
    # weight shared with other rules' matches (their gains do not add up)
    overlaps: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    # a count run's: the cost of the calls into it, and of the user's functions it calls
    # back (qsort's comparator), which its replacement does not make faster
    under: float = 0.0
    # the weight left out as the program's job (the rule's `not_under` callers below it)
    job: float = 0.0
    callbacks: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    def is_job(self) -> bool:
        """Mostly the program's job: what ran without its callers on the stack (a py-spy
        stall keeps native frames only) is taken to be the job's too."""
        return self.job > self.inclusive


def analyze(ctx: Context) -> list[Finding]:
    rules = ctx.options.rules or load_rules()
    total = ctx.profile.total
    if total <= 0:
        return []
    on_cpu = on_cpu_part(ctx.profile)
    as_named = is_own_command(ctx.run)
    lines = PythonLines(lambda file: find_source(file, ctx.src_roots, as_named))
    matches = match_rules(on_cpu, rules, lines)
    if ctx.counts is not None:
        for rule in rules:
            shaped = rule.scope == "self" or rule.entry_functions or rule.source_nodes
            if rule.id in matches and not shaped:
                matches[rule.id] = counted_match(rule, matches[rule.id], ctx.counts)
    threads = len({t for t in on_cpu.sample_thread if t >= 0}) or 1
    findings = []
    for rule in rules:
        match = matches.get(rule.id)
        if match is None or threads < rule.min_threads or match.is_job():
            continue
        if max(match.inclusive, match.under) / total < rule.min_share:
            continue
        finding = finding_for(rule, match, total, ctx)
        if on_cpu is not ctx.profile:
            finding.title = finding.title.replace("of CPU time", "of the recorded time (on CPU)")
        findings.append(finding)
    return findings


def on_cpu_part(profile: Profile) -> Profile:
    """The samples taken on the CPU: time waiting off it is not spent in any library,
    nor is a preempted thread's (all mode's "running" switch-outs)."""
    states = on_cpu_states(profile)
    off = switched_out_stacks(profile)
    if not off and all(state in states for state in profile.sample_state):
        return profile
    return profile.filtered(states=states, without_stacks=off)


def switch_out_frames(profile: Profile) -> set[int]:
    return {i for i, f in enumerate(profile.frames) if f.kernel and f.function in SWITCH_OUT}


def preempted_frames(profile: Profile) -> set[int]:
    """The switch-out frames of a run whose eBPF stacks were taken as threads left the
    CPU (offcpu and all modes), and wallsnap's RUNNABLE_IN_FUTEX (wall mode); none in
    perf's, whose samples in the scheduler ran."""
    recorder = profile.meta.get("recorder", "")
    if "bpftrace" in recorder:
        return switch_out_frames(profile)
    if recorder != "wallsnap":
        return set()
    return {i for i, f in enumerate(profile.frames) if f.kernel and f.function == RUNNABLE_IN_FUTEX}


def switched_out_stacks(profile: Profile) -> set[int]:
    """Ids of the stacks of threads preempted, off the CPU (preempted_frames): an
    all-mode run's 15% "on the CPU releasing mutexes" in sqlwriters was 14.8% threads
    preempted inside the unlock's futex wake by the waiter it woke."""
    frames = preempted_frames(profile)
    return {i for i, stack in enumerate(profile.stacks) if not frames.isdisjoint(stack)}


def on_cpu_states(profile: Profile) -> tuple[str, ...]:
    """The states of the profile's samples that are time on the CPU: none in an
    off-CPU recording (xz -T2's workers preempted in liblzma on a loaded machine read
    "48.6% of the recorded time (on CPU) is in liblzma" in offcpu mode)."""
    return () if profile.meta.get("recorder") in OFF_CPU_RECORDERS else ON_CPU_STATES


def match_rules(
    profile: Profile, rules: Sequence[Rule], lines: PythonLines | None = None
) -> dict[str, Match]:
    """rule id -> Match, in one pass over the samples (`lines`: Python source, for the
    rules with `source_nodes`; without it they match nothing)."""
    rules = with_evidence(rules, profile.frames)
    frame_rules = _rules_per_frame(profile.frames, rules, lines)
    entry_rules = _entry_rules_per_frame(profile.frames, rules)
    jobs = _jobs_per_frame(profile.frames, rules)
    leaf_only = {r for r, rule in enumerate(rules) if rule.scope == "self"}
    prefer_python = any(is_python_frame(frame) for frame in profile.frames)
    names = DisplayNames(profile.frames)
    matches: dict[str, Match] = {}
    for stack, weight, count, thread, _state in profile.rows():
        if not stack:
            continue
        outermost = _outermost(stack, frame_rules, leaf_only)
        if entry_rules:
            _extend_to_entries(outermost, stack, entry_rules, leaf_only)
        if jobs:
            for r in _jobs_under(outermost, stack, jobs):
                matches.setdefault(rules[r].id, Match()).job += weight
                del outermost[r]
        leaf_rules = frame_rules[stack[0]]
        for r, depth in outermost.items():
            match = matches.setdefault(rules[r].id, Match())
            match.inclusive += weight
            match.samples += count
            match.by_thread[thread] += weight
            credited = stack[:1] if r in leaf_only else stack
            _credit_functions(match, names, credited, r, frame_rules, weight)
            if r in leaf_rules:
                match.self += weight
                match.self_by_function[names[stack[0]]] += weight
                match.dsos[profile.frames[stack[0]].dso] += weight
            start = 0 if r in leaf_only else depth + 1  # the leaf's own line may be the site
            site = user_call_site(profile, stack[start:], prefer_python)
            if site is not None:
                match.call_sites[site] += weight
            for other in outermost:
                if other != r:
                    match.overlaps[rules[other].id] += weight
    return matches


def counted_match(rule: Rule, match: Match, counts: ExactCounts) -> Match:
    """The match read from a count run's call edges instead of its stacks, rebuilt from
    the call graph with each cycle of it one unit: an interpreter's (MuJS's jsR_run,
    Ap_sort, qsort, the JavaScript comparator and back) gave qsort the cycle's entry
    (jsR_run) as its caller and 5.1% of the run, where callgrind counts 24.4% under it,
    23.0% of it in the comparator. The match's share is its functions' own counts and
    the library code they call; the user's functions they call back are said apart,
    and the call sites are the calls into it from outside."""
    frames = counted_frames(counts)
    inside = {fid for fid, f in enumerate(frames) if rule.matches(f.function, f.dso, f.file)}
    if not inside:
        return match
    own = counts.self_by_id()
    exact = Match(samples=match.samples, overlaps=match.overlaps)
    for fid in inside:
        if own[fid]:
            exact.self += own[fid]
            exact.self_by_function[display_name(frames[fid])] += own[fid]
            exact.dsos[frames[fid].dso] += own[fid]
    exact.inclusive = exact.self
    calls = CountedCalls(counts, inside, frames)
    for callee, cost in calls.out.items():
        if is_user_code(frames[callee]):
            exact.callbacks[display_name(frames[callee])] += cost
        else:
            exact.inclusive += cost
    exact.under = counts.inclusive_of([inside])[0]
    for site, cost in calls.into.items():
        if is_user_code(site):
            exact.call_sites[site] += cost
    inclusive = counts.inclusive_by_id()
    for fid in inside:
        if own[fid]:
            exact.inclusive_by_function[display_name(frames[fid])] += inclusive[fid]
    scale = exact.inclusive / match.inclusive if match.inclusive else 0.0
    for thread, weight in match.by_thread.items():
        exact.by_thread[thread] = weight * scale
    return exact


def counted_frames(counts: ExactCounts) -> list[Frame]:
    """Each function of a count run as a frame, its recursion levels merged, in its own
    file: what rules and cost classes match when they read the counts."""
    return [
        Frame(merged_name(name), dso=ob, file=counts.files[counts.own_files[fid]])
        for fid, (ob, name) in enumerate(counts.functions)
    ]


class CountedCalls:
    """The counted calls across the border of a set of a count run's functions (ids
    `inside`): `into`, the cost of the calls into it from outside by call site (the
    caller at the call's line), `entered` by the function of it called; `out`, that of
    its calls to each function outside it. Functions by their ids in `frames`."""

    def __init__(self, counts: ExactCounts, inside: set[int], frames: Sequence[Frame]) -> None:
        self.frames = frames
        self.into: defaultdict[Frame, float] = defaultdict(float)
        self.entered: defaultdict[int, float] = defaultdict(float)
        self.out: defaultdict[int, float] = defaultdict(float)
        for caller, callee, file, line, cost in counts.call_edges():
            if caller in inside and callee not in inside:
                self.out[callee] += cost
            elif callee in inside and caller not in inside:
                outer = frames[caller]
                self.into[Frame(outer.function, outer.dso, counts.files[file], line)] += cost
                self.entered[callee] += cost


def _outermost(
    stack: tuple[int, ...], frame_rules: list[tuple[int, ...]], leaf_only: set[int]
) -> dict[int, int]:
    """rule -> depth of its outermost matching frame (the leaf only for `self` rules)."""
    outermost = dict.fromkeys(frame_rules[stack[0]], 0)
    for depth, fid in enumerate(stack[1:], 1):
        for r in frame_rules[fid]:
            if r not in leaf_only:
                outermost[r] = depth
    return outermost


def _extend_to_entries(
    outermost: dict[int, int],
    stack: tuple[int, ...],
    entry_rules: dict[int, tuple[int, ...]],
    leaf_only: set[int],
) -> None:
    """A rule's entry frames (`entry_functions`) above its outermost matching frame
    become its outermost: zlib's `compress` over `deflate`. Alone they match nothing."""
    for depth, fid in enumerate(stack):
        for r in entry_rules.get(fid, ()):
            if r in outermost and r not in leaf_only and depth > outermost[r]:
                outermost[r] = depth


def _entry_rules_per_frame(
    frames: Sequence[Frame], rules: Sequence[Rule]
) -> dict[int, tuple[int, ...]]:
    """frame -> the rules whose entry names it has (only frames that have any)."""
    with_entries = [i for i, rule in enumerate(rules) if rule.entry_functions]
    out: dict[int, tuple[int, ...]] = {}
    for fid, frame in enumerate(frames):
        found = tuple(i for i in with_entries if rules[i].enters(frame.function, frame.dso))
        if found:
            out[fid] = found
    return out


def _jobs_per_frame(frames: Sequence[Frame], rules: Sequence[Rule]) -> dict[int, set[int]]:
    """frame id -> the rules (indexes) whose matches above it are the program's job."""
    jobs: dict[int, set[int]] = {}
    for r, rule in enumerate(rules):
        if rule.not_under:
            for fid, frame in enumerate(frames):
                if rule.is_job_of(frame.function, frame.dso):
                    jobs.setdefault(fid, set()).add(r)
    return jobs


def _jobs_under(
    outermost: dict[int, int], stack: tuple[int, ...], jobs: dict[int, set[int]]
) -> list[int]:
    """The rules whose outermost match runs under one of their `not_under` callers."""
    return [
        r
        for r, depth in outermost.items()
        if any(r in jobs.get(fid, ()) for fid in stack[depth + 1 :])
    ]


def _rules_per_frame(
    frames: Sequence[Frame], rules: Sequence[Rule], lines: PythonLines | None
) -> list[tuple[int, ...]]:
    """Each frame's matching rules. Names are matched once per (function, DSO, file)
    and source shapes read once per line: a long Python run has many frames per name."""
    by_name: dict[tuple[str, str, str], tuple[int, ...]] = {}
    shapes: dict[tuple[str, int], frozenset[str]] = {}
    out = []
    for frame in frames:
        key = (frame.function, frame.dso, frame.file)
        named = by_name.get(key)
        if named is None:
            named = by_name[key] = tuple(i for i, rule in enumerate(rules) if rule.matches(*key))
        out.append(
            tuple(
                i
                for i in named
                if not rules[i].source_nodes or _shape_matches(rules[i], frame, lines, shapes)
            )
        )
    return out


def _shape_matches(
    rule: Rule,
    frame: Frame,
    lines: PythonLines | None,
    shapes: dict[tuple[str, int], frozenset[str]],
) -> bool:
    """The frame's Python source line has the shape the rule's source_nodes ask for.
    Only the user's own lines are read: a loop in the stdlib or a package is not theirs
    to rewrite (and parsing those files took seconds on json.tool's runs)."""
    if lines is None or not frame.file or not frame.line or is_library_file(frame.file):
        return False
    key = (frame.file, frame.line)
    if key not in shapes:
        shapes[key] = lines.shape(frame.file, frame.line)
    return all(any(p.search(name) for name in shapes[key]) for p in rule.source_nodes)


def _credit_functions(
    match: Match,
    names: DisplayNames,
    stack: tuple[int, ...],
    r: int,
    frame_rules: list[tuple[int, ...]],
    weight: float,
) -> None:
    for name in {names[fid] for fid in stack if r in frame_rules[fid]}:
        match.inclusive_by_function[name] += weight


def user_call_site(profile: Profile, callers: tuple[int, ...], prefer_python: bool) -> Frame | None:
    """The first of `callers` (leaf first) that is the user's own code; in a profile with
    Python frames its first Python frame, since the C frames of CPython's modules that
    come before it (zlibmodule.c, built with debug info) are not the user's."""
    first = None
    for fid in callers:
        frame = profile.frames[fid]
        if not is_user_code(frame):
            continue
        if not prefer_python or is_python_frame(frame):
            return frame
        first = first or frame
    return first


def is_user_code(frame: Frame) -> bool:
    """A frame with source outside the system's headers and libraries (and, for Python
    code, outside the stdlib and package folders). Valgrind's file of code without line
    information (`???`) is none: a Rust program's `(below main)` was the user's call
    into its formatting."""
    if frame.kernel or frame.file in ("", NO_SOURCE) or frame.file.startswith(NOT_USER_FILES):
        return False
    if CPYTHON_DSO.match(frame.dso) or any(d in frame.file for d in NOT_USER_DIRS):
        return False
    if is_python_frame(frame) and is_library_file(frame.file):
        return False
    return frame.function not in ("main", "_start") or bool(frame.line)


def finding_for(rule: Rule, match: Match, total: float, ctx: Context) -> Finding:
    share = match.inclusive / total
    site = _top_site(match)
    exact = ctx.profile.unit == "instructions"  # a count run: no samples, exact shares
    confidence = rule.confidence * confidence_factor(share, None if exact else match.samples)
    finding = Finding(
        rule=rule.id,
        kind=rule.kind,
        title=rule.title.replace("{share}", f"{100 * share:.1f}%"),
        share=share,
        estimated_gain=min(share, share * rule.saving),
        gain_low=share * rule.saving_range[0],
        gain_high=share * rule.saving_range[1],
        gain_basis=rule.source,
        confidence=round(confidence, 2),
        suggestion=_suggestion(rule, _threads(match), site),
        function=site.function if site else _top_name(match.inclusive_by_function),
        dso=site.dso if site else _top_name(match.dsos),
        file=site.file if site else "",
        line=site.line if site else 0,
        evidence=_evidence(
            match, total, "in" if rule.scope == "self" else "called from", counted=not exact
        ),
        details={
            "self_share": match.self / total,
            "saving": rule.saving,
            "saving_range": list(rule.saving_range),
            "saving_source": rule.source,
            "code_change": rule.code_change,
            "rule_origin": rule.origin,
        },
    )
    if rule.id.startswith("python.") and not any(map(is_python_frame, ctx.profile.frames)):
        finding.evidence.append(_native_only(ctx))
        finding.details["native_frames_only"] = True
    if site is None and rule.code_change and not rule.id.startswith("python."):
        programs = packaged_run(ctx)
        if programs:
            note_packaged_code(finding, programs)
    if rule.preload:
        _add_preload_fix(finding, rule, ctx)
    if rule.environment:
        settings = " ".join(f"{k}={v}" for k, v in rule.environment)
        finding.fix = {
            "env": dict(rule.environment),
            "command": f"{settings} {ctx.run.command or 'CMD'}",
        }
    return finding


def _native_only(ctx: Context) -> str:
    """The note of a python.* finding read from a run without Python frames."""
    why = ctx.run.meta.get("python_frames_missing") or (
        f"recorded in {ctx.run.mode or 'cpu'} mode, without py-spy"
    )
    return f"based on native frames only: this run has no Python frames ({why})"


def confidence_factor(share: float, samples: int | None) -> float:
    """Small or thinly sampled matches are less likely to be what holds the program back
    (SAMPLES None: exact counts, never thin)."""
    # 1.0 from a 20% share, 0.65 at 10%, 0.41 at 3%: Debian's sqlite3 spent 8.3% in
    # glibc's malloc and mimalloc made it no faster (bench/real_programs.py)
    by_share = min(1.0, 0.3 + 3.5 * share)
    return by_share if samples is None or samples >= STEADY_SAMPLES else by_share * 0.7


def _threads(match: Match) -> int:
    """The threads doing a part of the match's work (PARALLEL_PART of it or more)."""
    return sum(
        1 for t, w in match.by_thread.items() if t >= 0 and w >= PARALLEL_PART * match.inclusive
    )


def _suggestion(rule: Rule, threads: int = 1, site: Frame | None = None) -> str:
    """The rule's fix; its parallel_* text when the matched code runs on several threads
    already (a parallel build of the same library is no news then), its c_* text when
    the call to it is C code (xmllint's XPath parser was told to use std::from_chars)."""
    change = "code change needed" if rule.code_change else "no code change needed"
    if threads >= 2 and rule.parallel_apply:
        apply = rule.parallel_apply.replace("{threads}", str(threads))
        return f"Use {rule.parallel_replacement or rule.replacement} ({change}): {apply}"
    if in_c(site) and rule.c_apply:
        return f"Use {rule.c_replacement or rule.replacement} ({change}): {rule.c_apply}"
    return f"Use {rule.replacement} ({change}): {rule.apply}"


def in_c(site: Frame | None) -> bool:
    """Is the user's call into a match C code (no C++ library to suggest)?"""
    return site is not None and site.file.endswith(C_SOURCES)


def _top_site(match: Match) -> Frame | None:
    return heaviest(match.call_sites, 1)[0][0] if match.call_sites else None


def _top_name(weights: dict[str, float]) -> str:
    return heaviest(weights, 1)[0][0] if weights else ""


def heaviest(weights: dict[K, float], n: int) -> list[tuple[K, float]]:
    """The n items of largest weight, heaviest first; equal weights by name (a Frame by
    its function first), so the answer does not depend on the order samples came in."""
    return sorted(weights.items(), key=lambda kv: (-kv[1], str(kv[0])))[:n]


def _evidence(match: Match, total: float, sites_are: str, counted: bool) -> list[str]:
    """COUNTED: the match's samples are worth saying (a count run has none)."""
    lines = []
    for name, weight in heaviest(match.self_by_function, EVIDENCE_FUNCTIONS):
        inclusive = match.inclusive_by_function.get(name, weight)
        lines.append(
            f"{_short(name)} {100 * weight / total:.1f}% self, {100 * inclusive / total:.1f}% total"
        )
    if not lines:
        for name, weight in heaviest(match.inclusive_by_function, EVIDENCE_FUNCTIONS):
            lines.append(f"{_short(name)} {100 * weight / total:.1f}% total")
    on_stack = f"{match.samples:,} samples ({100 * match.inclusive / total:.1f}%) have it"
    if not counted:
        on_stack = f"{100 * match.inclusive / total:.1f}% of the instructions run with it"
    lines.append(f"{on_stack} on the stack, {100 * match.self / total:.1f}% in it directly")
    if match.callbacks:
        lines[-1] = (
            f"{100 * match.under / total:.1f}% of the instructions run under it: "
            f"{100 * match.self / total:.1f}% in it directly, "
            f"{100 * (match.inclusive - match.self) / total:.1f}% in the library code it calls, "
            f"{100 * sum(match.callbacks.values()) / total:.1f}% in the functions it calls back, "
            "which its replacement does not make faster: "
            + ", ".join(
                f"{_short(name)} ({100 * w / total:.1f}%)"
                for name, w in heaviest(match.callbacks, CALL_SITES)
            )
        )
    for rule_id, weight in heaviest(match.overlaps, 2):
        if weight / total >= OVERLAP_NOTED:
            lines.append(f"{100 * weight / total:.1f}% is also counted by {rule_id}")
    sites = heaviest(match.call_sites, CALL_SITES)
    if sites:
        lines.append(f"{sites_are} " + ", ".join(_site(s, w / total) for s, w in sites))
    return lines


def _site(frame: Frame, share: float) -> str:
    where = f"{frame.file}:{frame.line}" if frame.line else frame.file
    return f"{_short(display_name(frame))} at {where} ({100 * share:.1f}%)"


def display_name(frame: Frame) -> str:
    """A function name short enough to read: template arguments and parameters elided."""
    if not frame.function or frame.function.startswith("[unknown"):
        return f"[unknown] in {frame.dso}"
    if is_python_frame(frame):  # `<locals>`, `<genexpr>` are not template arguments
        return frame.function
    return elide_templates(frame.function)


class DisplayNames(dict[int, str]):
    """frame id -> display_name, each made once: the per-sample passes asked for one
    name 77,000 times on speedtest1's count run (half of library_match's time)."""

    def __init__(self, frames: Sequence[Frame]) -> None:
        super().__init__()
        self._frames = frames

    def __missing__(self, fid: int) -> str:
        name = self[fid] = display_name(self._frames[fid])
        return name


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _add_preload_fix(finding: Finding, rule: Rule, ctx: Context) -> None:
    installed = installed_libraries(rule.preload)
    command = ctx.run.command or "CMD"
    finding.details["installed"] = installed
    if installed:
        finding.fix = {
            "command": f"LD_PRELOAD={installed[0]} {command}",
            "alternatives": [f"LD_PRELOAD={path} {command}" for path in installed[1:]],
        }
        names = ", ".join(Path(p).name for p in installed)
        finding.evidence.append(f"installed here: {names}")
    else:
        finding.fix = {"install": rule.install, "command": f"LD_PRELOAD=<library> {command}"}
        finding.evidence.append(f"none of {', '.join(rule.preload)} is installed; {rule.install}")


def installed_libraries(sonames: Sequence[str]) -> list[str]:
    """Full paths of the libraries (by file name) found in the usual library folders."""
    found = []
    for soname in sonames:
        for folder in LIBRARY_DIRS:
            path = os.path.join(folder, soname)
            if os.path.exists(path):
                found.append(path)
                break
    return found
