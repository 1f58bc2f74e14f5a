"""Cost classes: every sample attributed to what its time is spent on, by where it is.

The classes are data (rules/cost_classes.toml): system calls by kind, page faults,
libc string and memory functions, reference counting, allocation, hashing,
formatting, sorting, regex engines, locks, JIT code, the interpreter, nameless code.
A frame belongs to the first class whose patterns match; a sample belongs to its
outermost class frame, the API boundary (the time under the user's call into
snprintf, write, qsort, a regex), unless a class that goes `inside` it runs further
down (a write(2) under printf is the write's cost). The user's caller is the first
frame of the user's own code above the boundary, so the finding names its line.

A class that holds a large part of the run becomes a finding with its advice,
unless a library rule (library_match.py) matches most of its samples at or above
the boundary and the class does not go `alongside` it: that rule's finding is the
more specific one (snprintf is the
formatting.printf rule's; malloc under regcomp is the regex's cost, not the
allocator rule's). Blocking classes (fsync) count their waiting
samples too; in a CPU-only recording of a process that was mostly off the CPU, the
time off it is credited to the blocking calls seen on it, and the finding says so.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model.counts import ExactCounts
from ..model.findings import Finding
from ..model.profile import Frame, Profile, is_python_frame
from ..rules import Rule, load_classes, load_rules, with_evidence, without_return_type
from . import Context
from .library_match import (
    OVERLAP_NOTED,
    CountedCalls,
    DisplayNames,
    confidence_factor,
    counted_frames,
    display_name,
    heaviest,
    in_c,
    is_user_code,
    on_cpu_states,
    preempted_frames,
    user_call_site,
)
from .packaged_programs import note_packaged_code, packaged_run

SMALL_COPY, LARGE_COPY = 0.25, 0.75  # the copy's part of a read or write: small, large calls
COVERED = 0.5  # a library rule matching this much of a class's samples speaks for it
MOSTLY_WAITING = 0.5  # on the CPU less than this part of the wall time
INFERRED_CONFIDENCE = 0.8  # waits inferred from on-CPU samples are less certain
EVIDENCE_ROWS = 4
CALL_SITES = 3
C_RUNTIME_DSOS = ("libc.so", "libc-", "ld-linux")
NS = 1e9


@dataclass
class ClassCost:
    """What one class holds, weights in the profile's unit."""

    weight: float = 0.0
    samples: int = 0
    waiting: float = 0.0  # of weight, samples off the CPU (blocking classes)
    boundary: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    leaves: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    sites: defaultdict[Frame, float] = field(default_factory=lambda: defaultdict(float))
    covered: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    # leaves of the samples its fix leaves as they are (unsaved_leaves, unsaved_under)
    unsaved: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))


@dataclass
class Attribution:
    costs: dict[str, ClassCost]
    rule_weight: dict[str, float]  # library rule id -> on-CPU weight it matches
    threads: int  # threads with on-CPU samples
    processes: int  # processes with on-CPU samples
    # class id -> the weight of the samples with a frame of it (what attribute() was
    # asked to count: a count run's, whose other classes take a part of it)
    under: dict[str, float] = field(default_factory=dict)


def analyze(ctx: Context) -> list[Finding]:
    profile = ctx.profile
    total = profile.total
    if total <= 0:
        return []
    classes = load_classes()
    rules = ctx.options.rules or load_rules()
    found = attribute(profile, classes, rules, counted=ctx.counts is not None)
    if ctx.counts is not None:
        count_costs(found, ctx.counts, classes)
    cpu_fraction = on_cpu_fraction(ctx)
    blocking = sum(found.costs[c.id].weight for c in classes if c.blocking and c.id in found.costs)
    firing = {r.id for r in rules if found.rule_weight.get(r.id, 0.0) / total >= r.min_share}
    findings = []
    packaged: list[str] | None = None  # read once, when a class has no caller of the user's
    for cls in classes:
        cost = found.costs.get(cls.id)
        if cost is None or cls.saving <= 0 or not _enough_tasks(cls, found):
            continue
        share, inferred = _share(cls, cost, blocking, total, cpu_fraction)
        if share < cls.min_share or _covering_rule(cls, cost, firing):
            continue
        finding = _finding(cls, cost, share, total, inferred, cpu_fraction)
        finding.title = finding.title.replace("{processes}", f"{found.processes:,}")
        _note_alongside(finding, cls, cost, firing, total)
        if not cost.sites:
            packaged = packaged_run(ctx) if packaged is None else packaged
            if packaged:
                note_packaged_code(finding, packaged)
        findings.append(finding)
    return findings


def _enough_tasks(cls: Rule, found: Attribution) -> bool:
    return found.threads >= cls.min_threads and found.processes >= cls.min_processes


def frame_classes(frames: Sequence[Frame], classes: Sequence[Rule]) -> list[int]:
    """Each frame's class index (the first that matches), -1 for none.

    The classes' function patterns are all anchored at the start, so one alternation
    of them, tried in order, finds the first class in one regex call per name.
    """
    combined = re.compile(
        "|".join(
            f"(?P<c{i}>{'|'.join(f'(?:{p.pattern})' for p in cls.functions)})"
            for i, cls in enumerate(classes)
            if cls.functions
        )
    )
    by_dso = [(i, cls.dsos) for i, cls in enumerate(classes) if cls.dsos]
    seen: dict[tuple[str, str], int] = {}

    def first_class(frame: Frame) -> int:
        key = (frame.function, frame.dso)
        if key not in seen:
            found = [i for i, dsos in by_dso if any(p.search(frame.dso) for p in dsos)]
            for name in (frame.function, without_return_type(frame.function)):
                m = combined.match(name)
                if m and m.lastgroup:
                    found.append(int(m.lastgroup[1:]))
            seen[key] = min(found, default=-1)
        return seen[key]

    return [first_class(frame) for frame in frames]


def classify(
    stack: tuple[int, ...], frame_class: list[int], classes: Sequence[Rule]
) -> tuple[int, int] | None:
    """(class index, depth of its boundary frame) of a leaf-first stack, None when no
    frame is in a class. Leaf-only classes count only as the leaf."""
    best: tuple[int, int] | None = None
    for depth in range(len(stack) - 1, -1, -1):
        c = frame_class[stack[depth]]
        if c < 0 or (depth and classes[c].scope == "self"):
            continue
        if best is None or classes[best[0]].id in classes[c].inside:
            best = (c, depth)
    return best


def attribute(
    profile: Profile, classes: Sequence[Rule], rules: Sequence[Rule], *, counted: bool = False
) -> Attribution:
    """Every sample's class, with the library rules' matches over the same samples
    (COUNTED: and the weight under each class, for count_costs)."""
    frame_class = frame_classes(profile.frames, classes)
    rule_frames = _rule_frames(profile.frames, with_evidence(rules, profile.frames))
    prefer_python = any(is_python_frame(f) for f in profile.frames)
    costs: dict[str, ClassCost] = {}
    rule_weight: dict[str, float] = defaultdict(float)
    threads: set[int] = set()
    under: dict[int, float] = defaultdict(float)
    cpu_states = on_cpu_states(profile)
    switch_out = preempted_frames(profile)
    names = DisplayNames(profile.frames)
    unsaved = _unsaved_frames(profile.frames, classes, names)
    for stack, weight, count, thread, state in profile.rows():
        on_cpu = state in cpu_states and switch_out.isdisjoint(stack)
        matched = {r for fid in stack for r in rule_frames[fid]} if on_cpu else set()
        for r in matched:
            rule_weight[r] += weight
        if on_cpu and thread >= 0:
            threads.add(thread)
        found = classify(stack, frame_class, classes) if stack else None
        if found is None or not (on_cpu or classes[found[0]].blocking):
            continue
        c, depth = found
        if counted:  # a stack without a class's frame is under none
            for k in set(map(frame_class.__getitem__, stack)):
                under[k] += weight
        cost = costs.setdefault(classes[c].id, ClassCost())
        cost.weight += weight
        cost.samples += count
        cost.waiting += 0.0 if on_cpu else weight
        cost.boundary[names[stack[depth]]] += weight
        cost.leaves[names[stack[0]]] += weight
        if c in unsaved and _is_unsaved(stack, depth, *unsaved[c]):
            cost.unsaved[names[stack[0]]] += weight
        site = _caller(profile, stack[depth + 1 :], frame_class, prefer_python)
        if site is not None:
            cost.sites[site] += weight
        for r in _covering(stack[depth:], c, frame_class, rule_frames, classes):
            cost.covered[r] += weight
    processes = {profile.threads[t].pid for t in threads}  # 0, unknown: counted once
    named = {classes[c].id: w for c, w in under.items() if c >= 0}
    return Attribution(costs, dict(rule_weight), len(threads) or 1, len(processes) or 1, named)


def count_costs(found: Attribution, counts: ExactCounts, classes: Sequence[Rule]) -> None:
    """A count run's class costs from its counted calls, not from the stacks derived
    from them, where each cycle of the call graph is one unit: MuJS sorting 12,000
    strings with a JavaScript comparator (jsR_run, Ap_sort, qsort, the comparator and
    back: one cycle) had 0.1% of its run in sorting where callgrind counts 24.4% under
    qsort. A class's weight is the counted inclusive cost of its functions
    (ExactCounts.inclusive_of), less what the stacks give other classes of it (a write
    under printf is the write's); the calls into it are the counted calls from outside
    it, the time spent in it its functions' own counts and their calls out of it.
    Classes of the leaf only (`scope = "self"`) keep the stacks' exact self counts."""
    frames = counted_frames(counts)
    frame_class = frame_classes(frames, classes)
    kept = [cls for cls in classes if cls.id in found.costs and cls.scope != "self"]
    index = {cls.id: c for c, cls in enumerate(classes)}
    sets = [{fid for fid, c in enumerate(frame_class) if c == index[cls.id]} for cls in kept]
    own = counts.self_by_id()
    for cls, inside, inclusive in zip(kept, sets, counts.inclusive_of(sets), strict=True):
        cost = found.costs[cls.id]
        if inside and cost.weight:
            taken = found.under.get(cls.id, cost.weight) - cost.weight
            _recount(cost, max(0.0, inclusive - taken), CountedCalls(counts, inside, frames))
            for fid in inside:
                if own[fid]:
                    cost.leaves[display_name(frames[fid])] += own[fid]


def _recount(cost: ClassCost, weight: float, calls: CountedCalls) -> None:
    """COST with WEIGHT and the counted CALLS across its border; the parts of it the
    stacks said apart (covered by a rule, left as they are by the fix) scaled to it."""
    scale = weight / cost.weight
    for part in (cost.covered, cost.unsaved):
        for key in part:
            part[key] *= scale
    cost.waiting *= scale
    cost.weight = weight
    cost.boundary.clear()
    cost.leaves.clear()
    cost.sites.clear()
    frames = calls.frames
    for fid, cost_in in calls.entered.items():
        cost.boundary[display_name(frames[fid])] += cost_in
    for fid, cost_out in calls.out.items():
        cost.leaves[display_name(frames[fid])] += cost_out
    users = {site: w for site, w in calls.into.items() if is_user_code(site)}
    for site, w in (users or {s: w for s, w in calls.into.items() if _named(s)}).items():
        cost.sites[site] += w


def _unsaved_frames(
    frames: Sequence[Frame], classes: Sequence[Rule], names: DisplayNames
) -> dict[int, tuple[list[bool], list[bool]]]:
    """class index -> (per frame id: a leaf its fix leaves as it is, a frame under which
    it leaves the time as it is), for the classes that name them."""
    out = {}
    shown = [names[fid] for fid in range(len(frames))]
    for c, cls in enumerate(classes):
        if cls.unsaved_leaves or cls.unsaved_under:
            out[c] = (
                [any(p.match(n) for p in cls.unsaved_leaves) for n in shown],
                [any(p.match(n) for p in cls.unsaved_under) for n in shown],
            )
    return out


def _is_unsaved(stack: tuple[int, ...], depth: int, leaf: list[bool], under: list[bool]) -> bool:
    return leaf[stack[0]] or any(under[fid] for fid in stack[1:depth])


def _covering(
    outer: tuple[int, ...],
    c: int,
    frame_class: list[int],
    rule_frames: list[frozenset[str]],
    classes: Sequence[Rule],
) -> set[str]:
    """The library rules matching the boundary frame or its callers (their code calls
    into the class), except in frames of the classes this one took the sample from (a
    write(2) under iostream is the write's, not the iostream rule's)."""
    inside = set(classes[c].inside)
    return {
        r
        for fid in outer
        if frame_class[fid] < 0 or classes[frame_class[fid]].id not in inside
        for r in rule_frames[fid]
    }


def _rule_frames(frames: Sequence[Frame], rules: Sequence[Rule]) -> list[frozenset[str]]:
    """Each frame's matching library rules (by id), looked up once per name, DSO and
    source file. Rules of the leaf only (the interpreter's) or of a source line's shape
    claim no call anywhere on a stack: they cover nothing."""
    rules = [r for r in rules if r.scope == "stack" and not r.source_nodes]
    seen: dict[tuple[str, str, str], frozenset[str]] = {}
    out = []
    for f in frames:
        key = (f.function, f.dso, f.file)
        if key not in seen:
            seen[key] = frozenset(r.id for r in rules if r.matches(*key))
        out.append(seen[key])
    return out


def _caller(
    profile: Profile, callers: tuple[int, ...], frame_class: list[int], prefer_python: bool
) -> Frame | None:
    """The user's code that called into the class; without any (a Debian program with
    no debug info), the first named frame in no class, not the C runtime's start-up
    (`__libc_start_call_main` under a stripped program's nameless frames says nothing)."""
    site = user_call_site(profile, callers, prefer_python)
    if site is not None:
        return site
    for fid in callers:
        frame = profile.frames[fid]
        if frame_class[fid] < 0 and _named(frame):
            return frame
    return None


def _named(frame: Frame) -> bool:
    """A caller worth naming without the user's code: not the kernel's, nameless or
    the C runtime's start-up."""
    return (
        not frame.kernel
        and frame.function[:1] not in ("", "[")
        and not frame.dso.startswith(C_RUNTIME_DSOS)
    )


def on_cpu_fraction(ctx: Context) -> float | None:
    """The CPUs' worth of time the run's threads used over its wall time, in a CPU
    recording (None in other modes: their waits are samples of their own)."""
    profile = ctx.profile
    duration = ctx.run.duration_s if ctx.run else None
    if profile.unit != "ns" or not duration or ctx.run.mode != "cpu":
        return None
    return min(1.0, profile.total / (duration * NS))


def _share(
    cls: Rule, cost: ClassCost, blocking: float, total: float, cpu_fraction: float | None
) -> tuple[float, bool]:
    """(share of the run, whether it is inferred): a blocking class of a process mostly
    off the CPU gets the time off it, split between the blocking classes seen
    (`blocking`: their weight together)."""
    share = cost.weight / total
    if not cls.blocking or cpu_fraction is None or cpu_fraction >= MOSTLY_WAITING:
        return share, False
    return cpu_fraction * share + (1.0 - cpu_fraction) * cost.weight / blocking, True


def _covering_rule(cls: Rule, cost: ClassCost, firing: set[str]) -> str | None:
    """The library rule that makes a finding (one of `firing`) over most of this class's
    samples (not one the class goes `alongside`: that rule's fix is another)."""
    for rule_id, weight in heaviest(cost.covered, len(cost.covered)):
        if rule_id in cls.alongside:
            continue
        if rule_id in firing and weight >= COVERED * cost.weight:
            return rule_id
    return None


def _note_alongside(
    finding: Finding, cls: Rule, cost: ClassCost, firing: set[str], total: float
) -> None:
    """Say which time the finding of a rule the class goes `alongside` counts too: both
    are shown, and their gains do not add up (xmllint's allocation class, 29.4% of the
    run, held all of the allocator rule's 15.5%; fewer allocations leave a faster
    allocator less to save)."""
    shared = {
        rule_id: cost.covered[rule_id] / total
        for rule_id in cls.alongside
        if rule_id in firing and cost.covered.get(rule_id, 0.0) / total >= OVERLAP_NOTED
    }
    for rule_id, share in shared.items():
        finding.evidence.append(
            f"{100 * share:.1f}% is also counted by {rule_id}: the two fixes save the same "
            "time, so their gains do not add up"
        )
    if shared:
        finding.details["also_counted_by"] = shared


def _finding(
    cls: Rule,
    cost: ClassCost,
    share: float,
    total: float,
    inferred: bool,
    cpu_fraction: float | None,
) -> Finding:
    sites = heaviest(cost.sites, CALL_SITES)
    site = sites[0][0] if sites else None
    calls = ", ".join(name for name, _w in heaviest(cost.boundary, 2))
    title = cls.title.replace("{share}", f"{100 * share:.1f}%").replace("{calls}", calls)
    if inferred:
        title = title.replace("of CPU time", "of the run (inferred)")
    elif cost.waiting:
        title = title.replace("of CPU time", "of the recorded time")
    if site is not None:
        title += f", from {_where(site)}"
    confidence = cls.confidence * confidence_factor(share, cost.samples)
    basis = cls.source
    if inferred:
        confidence *= INFERRED_CONFIDENCE
        basis += (
            f"; the process ran on the CPU {100 * (cpu_fraction or 0):.0f}% of the run, and "
            "the time off it is taken to be waiting in these calls (`--mode all` measures it)"
        )
    low, high = cls.saving_range
    unsaved_leaves = cost.unsaved
    copying = sum(unsaved_leaves.values())
    unsaved = share * (1.0 - _saved_part(copying / cost.weight)) if copying else 0.0
    saved = share - unsaved  # what the fix can save of the share
    evidence = _evidence(cost, total, sites, inferred, cpu_fraction, share)
    if unsaved_leaves:
        named = ", ".join(name for name, _w in heaviest(unsaved_leaves, 2))
        evidence.append(
            f"{100 * copying / cost.weight:.0f}% of its time is in {named}, moving the bytes "
            "(a copy, the disk, a fresh buffer's page faults): " + _copying_says(unsaved, share)
        )
    return Finding(
        rule=f"class.{cls.id}",
        kind="cost-class",
        title=title,
        share=share,
        estimated_gain=min(saved, saved * cls.saving),
        gain_low=saved * low,
        gain_high=saved * high,
        gain_basis=basis,
        confidence=round(confidence, 2),
        suggestion=_advice(cls, site),
        function=site.function if site else heaviest(cost.boundary, 1)[0][0],
        dso=site.dso if site else "",
        file=site.file if site else "",
        line=site.line if site else 0,
        evidence=evidence,
        details={
            "class": cls.id,
            "unsaved_share": unsaved,
            "saving": cls.saving,
            "saving_range": [low, high],
            "cpu_share": cost.weight / total,
            "waiting_share": cost.waiting / total,
        },
    )


def _advice(cls: Rule, site: Frame | None) -> str:
    """The class's fix; its C text when the user's call is C code (a C program's
    allocations were told to reserve() containers)."""
    apply = (cls.c_apply if in_c(site) else "") or cls.apply
    return apply[:1].upper() + apply[1:]


def _copying_says(unsaved: float, share: float) -> str:
    if not unsaved:
        return "a small part, so the calls are small"
    if unsaved >= share:
        return "bigger calls would move as many bytes (no gain counted)"
    return f"calls of middling size; {100 * unsaved:.1f}% of the run is left out of the estimate"


def _saved_part(copying: float) -> float:
    """The part of a class's time its fix saves, from the part spent copying the bytes
    (unsaved_leaves), which says how large the calls are. Small calls spend their time
    per call, even their copy's: one-byte reads copied 21% of the time, and 64 KiB reads
    saved all of it (read_per_byte.c). Large calls spend it per byte, and bigger ones
    copy as much: GNU grep's 96 KiB reads copied all of the time, dd's 1 MiB writes 92%.
    In between, linearly: the calls of about 2 KiB where a copy takes as long as the
    system call (SMALL_COPY .. LARGE_COPY)."""
    return min(1.0, max(0.0, (LARGE_COPY - copying) / (LARGE_COPY - SMALL_COPY)))


def _evidence(
    cost: ClassCost,
    total: float,
    sites: list[tuple[Frame, float]],
    inferred: bool,
    cpu_fraction: float | None,
    share: float,
) -> list[str]:
    lines = [
        "calls into it: "
        + ", ".join(f"{name} {100 * w / total:.1f}%" for name, w in heaviest(cost.boundary, 3)),
        "time spent in: "
        + ", ".join(
            f"{name} {100 * w / total:.1f}%" for name, w in heaviest(cost.leaves, EVIDENCE_ROWS)
        ),
    ]
    if cost.waiting:
        lines.append(f"{100 * cost.waiting / total:.1f}% of the run waits off the CPU in it")
    if inferred:
        lines.append(
            f"the process ran on the CPU only {100 * (cpu_fraction or 0):.1f}% of the run: "
            f"about {100 * share:.0f}% of the wall time is taken to wait in these calls"
        )
    if sites:
        lines.append(
            "called from " + ", ".join(f"{_where(s)} ({100 * w / total:.1f}%)" for s, w in sites)
        )
    return lines


def _where(frame: Frame) -> str:
    name = display_name(frame)
    if frame.file and frame.line:
        return f"{name} at {frame.file.rsplit('/', 1)[-1]}:{frame.line}"
    return name if is_user_code(frame) or not frame.dso else f"{name} in {frame.dso}"
