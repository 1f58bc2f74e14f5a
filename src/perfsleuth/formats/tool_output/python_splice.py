"""Mixed Python + native stacks spliced from perf's samples and py-spy's Python stacks.

Why splice rather than read `py-spy record --native`: to unwind a native stack py-spy
stops the process (ptrace) at every sample, which slowed json_heavy.py by 36% at
100 Hz here (docs/python.md#overhead). perf copies the user stack in the kernel at
each sample without stopping anyone, and `py-spy --nonblocking` without `--native`
reads the Python frames from memory while the process runs; each stays within a few
percent. What neither gives alone is the mixed stack, hence this splice, done after
the run:

- each perf sample (thread, time, native stack leaf first) takes the Python stack
  py-spy saw on that thread at that time (formats/tool_output/py_spy_trace.py);
- the native frames above the innermost eval loop (`_PyEval_EvalFrameDefault`), less
  CPython's call glue just above it, go on top of the Python stack: the C function
  Python called and what it called (`zlib_compress`, `deflate`, ...);
- the eval loops and everything below them (the interpreter's start-up, the glue
  between Python frames, a C function that calls back into Python) are replaced by
  the Python stack, as `py-spy --native` does; a C caller of a Python callback is lost;
- above the Python stack, the interpreter's own functions (those in the DSO of the eval
  loop: `libpython3.11.so.1.0`, or the `python3.11` executable that links it in) are
  left out as `py-spy --native` leaves them out, but for the prefixes it keeps
  (KEPT_PREFIXES: `time_sleep`, `gc_collect_main`, `sre_…`, `PyThread_…`) and the
  outermost frame of CPython's parser and compiler (COMPILER: `compile()`,
  `eval()` of text, which py-spy leaves on the calling line), and so is the
  C runtime they call (libc's `memcpy`, ld.so's `__tls_get_addr`, which 3.12's libpython
  calls for its thread state: 4% of a string-formatting loop): the time of
  `pymalloc_alloc`, `PyLong_FromLong`, `binary_op1` a line of Python runs is that line's
  own, as py-spy shows it, not a libpython row above every Python function in `top`.
  C modules in their own files (`_json`, `zlib`), libraries (`libz`) and what they call
  stay.

Time: py-spy samples ten times faster than perf, and its trace says when a stack
changed, stamped when py-spy's main thread handled the sample its sampling thread took
(late by the sampling gap plus both threads' waits for a CPU: tens of ms on a loaded
machine), on a clock whose origin is known only within the time Popen took to start
py-spy (the recorder may wait for a CPU after py-spy's clock started). So, per run:

- the clock offset is the one (STAMPS_LATE plus that time early to START_LATE plus
  twice that time late: py-spy's own start-up waits for a CPU too)
  under which the native entries (the C function
  Python called: `encoder_call`, `zlib_compress`) agree best with the Python leaf frames
  the trace gives at the samples' times. Every sample counts: the few near a stack
  change move the counts little, while counting only the samples no change comes near
  left ~10 of ~100 on json_heavy.py, too few to tell the right offset from one a round
  away (5 of 8 runs on a quiet machine put json's decoder under `serialize`). An offset
  a turn of the program's alternation away agrees about as well, the C functions as
  consistently under the other Python function, so of the offsets near the best
  (NEAR_BEST) those nearest what the clocks allow win (_nearest_peak);
- a sample with changes near it (within the run's reach: as far as the entries that
  nearly always go with one Python frame say its trace is off, at most EARLY before and
  LAG after) takes the candidate stack its
  native entry went with most over the run, when SWITCH times as often as with the
  stack the trace gives at its time (an entry both functions call stays where the
  trace puts it); when none did and the entry nearly
  always goes with one Python frame, the nearest stack with that frame within FAR (py-spy
  lagged more than LAG); else the stack the trace gives at its time;
- a sample in a stall of py-spy's (a stretch of the trace without a change longer than
  twice 5 of the thread's median gaps between changes, and than 80 ms: py-spy waited for a CPU while
  the process ran, and its trace holds its last stack, which is not the thread's) is
  placed by what the samples themselves say (_in_stall): the Python function each was
  in is inferred from the native entries of the stall's samples together, as a hidden
  Markov chain whose states are the thread's functions, each giving the entries in the
  proportions seen with it outside the stalls, from the stall's two ends, which py-spy
  saw. A sample takes the function it was in with a chance of at least CERTAIN, else
  keeps its native frames only, counted (`stalled`): crunch's `_PyLong_Multiply` and
  spell's `PyObject_Str` place themselves and the bare eval loop around them, and the
  middle of a stretch that nothing tells apart stays native. A stall whose samples in
  a C function are nearly all in one that nearly always goes with the stack it holds
  (a long C call: `zlib_compress` under `pack_logs`) keeps that stack. The samples in
  stalls count neither for the offset nor for what each entry goes with (at load 14,
  py-spy stalled through half of a run's samples, and counting them put crunch 12
  points over what it ran).

A thread py-spy names by its pthread id (CPython before 3.11, formats/tool_output/py_spy_trace.py)
is paired with an OS thread of the samples: the one not running threading's
`_bootstrap` is the main thread, whose id is the process's; each other one goes to the
free thread with the most samples taken while py-spy saw it run Python code, the
heaviest pairs first.

A sample of a thread py-spy never saw keeps its native stack; one in the interpreter
taken before py-spy's first sample of its thread is left out and counted (py-spy takes
20-300 ms to start reading a process, perf none: those samples would show only
`_PyEval_EvalFrameDefault`, and `py-spy --native` never sees them either). A stack
that stops short of the process's or thread's start and has no eval loop (perf's copy
of the stack ended first) is put on top of the Python stack whole, as py-spy does.

The result is written in py-spy's raw format (`frame;frame COUNT`, root first), which
formats/py_spy.py reads like a `py-spy --native` recording. The fleet agent, whose
frames are its own (kernel frames, build-ids), takes each sample's place instead
(`place`): the Python stack it goes with and which of its user frames stay on top, so
the interpreter's own functions are left out there by the same rule.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .perf_samples import NativeFrame, Sample
from .py_spy_trace import PID_MAX, Timeline

EVAL_LOOP = frozenset({"_PyEval_EvalFrameDefault", "PyEval_EvalFrameDefault", "PyEval_EvalFrameEx"})
# CPython's call machinery between the eval loop and the C function it calls
GLUE = re.compile(
    r"^(?:_?PyObject_\w*(?:Call|Vectorcall)\w*|PyVectorcall_\w+|_PyFunction_Vectorcall"
    r"|_PyEval_\w+|_?PyCFunction_\w+|cfunction_\w+|method_vectorcall\w*|vectorcall_\w+"
    r"|object_vacall|do_call_core|call_function|slot_tp_call)$"
)
# interpreter functions py-spy --native keeps above the Python stack (its whitelist of the
# first word of the name, split at `_` and `.`): builtins that wait or collect
KEPT_PREFIXES = frozenset(
    {
        "time",
        "sys",
        "gc",
        "os",
        "unicode",
        "thread",
        "stringio",
        "sre",
        "PyGilState",
        "PyThread",
        "lock",
    }
)
# CPython's parser and compiler entered from Python (compile(), exec() and eval() of
# source text, an import without its .pyc): work of its own, not the calling line's, so
# the outermost such frame stays above the Python stack with the interpreter's functions
# it runs folded into it. py-spy --native put 74% of `python3 -m compileall` on
# importlib's `_call_with_frames_removed` line. The exported names too: Debian's
# python3.11 has no symbols for builtin_compile and builtin_eval, only for these
COMPILER = frozenset(
    {
        "builtin_compile",
        "builtin_exec",
        "builtin_eval",
        "Py_CompileStringObject",
        "Py_CompileStringExFlags",
        "PyRun_StringFlags",
        "_PyAST_Compile",
        "_PyParser_ASTFromString",
    }
)
# the C runtime the interpreter calls for its own work (a frame's DSO in py-spy's form)
RUNTIME = re.compile(r"^(?:\S*/)?(?:libc\.so|libm\.so|libpthread|ld-linux|\[unknown\]|\?\))")
# the first frame of a process or of a thread: a stack reaching one is whole
ROOTS = frozenset({"_start", "clone", "clone3", "__clone", "__clone3", "start_thread"})
KERNEL = "[kernel.kallsyms]"
# Offsets of py-spy's clock tried (_aligned): its stamps are late (its main thread
# stamps a change when it handles the sample its sampling thread read, after both waited
# for a CPU), and the origin we are given, taken when Popen returned, may come after its
# clock started (the recorder waited for a CPU too) by up to the time Popen took (the
# caller's SLACK): of 26 recordings of json_heavy.py at load 4-12, the best offset was
# 39 ms early to 9 ms late. Up to STAMPS_LATE early and START_LATE late (py-spy's
# start-up after exec: 1-11 ms at load 12), in SHIFT_STEP steps
STAMPS_LATE = 0.060
START_LATE = 0.020
# py-spy's start-up waits for a CPU as Popen did, and does more (it reads the process's
# maps and the interpreter's symbols): START_LATE plus START_SLACK times the time Popen
# took late (at load 30 its clock started 68 ms after a Popen of 30 ms returned, on
# pyenv's 3.13.0: the offset a turn of the program early was taken, crunch 3.9 points
# over what it ran)
START_SLACK = 2
SHIFT_STEP = 0.002
# At most this much SLACK is searched: each offset tried reads every sample again (a
# Popen of 2 s on a saturated machine would be 1,000 offsets), and the wider the
# search the likelier a wrong far-off tie; Popen took up to 170 ms at load 25.
MAX_SLACK = 0.300
# The agreement is as good a turn of the program's alternation away, its C functions as
# consistently under the other Python function: on a quiet machine, where timed_pair.py
# turns between crunch and spell every ~60 ms (pyenv's 3.11.7), the best offset was the
# one 59 ms early in 2 of 22 runs at load 2-5 (3% over the right one; crunch read 4.4
# points under its timer, its self 8.6), and json_heavy.py's best was one serialize/parse
# round (24 ms) early. So the offsets within NEAR_BEST of the best are told apart by the
# clocks: the stretch of them nearest what the clocks allow wins (_nearest_peak)
NEAR_BEST = 0.9
# The offset is the run's typical one: a change's own stamp is late by 0 to tens of ms
# more or less, so the stacks of the changes up to EARLY before and LAG after a sample's
# aligned time are its candidates (at 2 and 10 ms, 3 of 37 such recordings put
# over 5% of json's C frames under the wrong function; at 20 and 20, 1 of 37). A sample
# leaves the trace's own stack for another only when its native entry went with that
# one's Python frame SWITCH times as often: an entry both functions call (CPython's
# `PyNumber_Remainder` under crunch's `% 7` and spell's `% 97` in timed_pair.py) would
# otherwise go to the one that calls it more near every change (crunch 5.1 points over
# the timers in one of 9 runs at load 16; 2.6 at most with SWITCH). 3, not 5: where a
# program turns every ~12 ms (json_heavy.py with py-spy late by a few ms), a C entry's
# samples went with the wrong function's frame in a fifth of its aligned samples, under
# 5x its right one's: 13 runs of 4 s, 34 of ~141 scanner_call samples wrong (median) at 5,
# 16 at 3; timed_pair.py against its own turns (4 runs at load 12) the same at both
EARLY = 0.020
LAG = 0.020
SWITCH = 3
# a native entry seen with one Python frame this often is taken to always go with it; a
# sample of it whose trace says otherwise (py-spy lagging more than LAG) looks that far
USUAL_SHARE = 0.9
USUAL_MIN = 3
FAR = 0.050
# py-spy stalls on a loaded machine (its threads wait for a CPU while the process runs):
# its trace then holds one stack for up to a second (_Stalls): a stretch without a change
# over twice STALL_STEPS of the thread's typical gap between changes (the median: at
# least py-spy's sampling interval), and over twice STALL_MIN. 25 steps before the
# stall's samples were inferred (_in_stall): a starved py-spy's median gap grows (8-10 ms
# at load 25), and stretches of 200-400 ms went as the trace held them (crunch 6.2 points
# over what it ran on pyenv's 3.9.18); over 43 kept runs of timed_pair.py at load 3-30,
# 5 steps put crunch at most 2.8 points off what it ran (mean 0.7), 25 at most 6.2 (1.0)
STALL_STEPS = 5
STALL_MIN = 0.040
# In a stall, a sample takes the Python function its native entry and those around it
# make this likely (_in_stall); EMIT_PRIOR: the samples of each entry a function is taken
# to have had beyond those seen with it (one never seen with it is not impossible: the
# trace it was learned from is off near changes). Not in the proportions of all: a
# function seen in one or two samples would then explain any mix of entries as well as
# the two that alternate, and took json_heavy.py's stalls whole at load 30
CERTAIN = 0.9
EMIT_PRIOR = 0.5
LINE = re.compile(r":\d+\)$")


@dataclass(frozen=True)
class _Split:
    """A perf sample cut where the Python stack goes."""

    sample: Sample
    top: tuple[str, ...]  # native frames above the Python stack, leaf first, raw text
    entry: str  # the C function Python called ("" when the eval loop itself ran)
    spliced: bool  # False: no eval loop in a whole stack: native code only


@dataclass
class Spliced:
    lines: Counter[str]  # py-spy raw stacks (root first, `thread (TID): NAME` frame): samples
    early: int  # interpreter samples left out: taken before py-spy's first of their thread
    python: int = 0  # samples given a Python stack
    stalled: int = 0  # interpreter samples kept native: in a stretch py-spy did not read


@dataclass(frozen=True)
class Placed:
    """Where one sample goes: under PYTHON (root first; () keeps its native stack) with
    its user frames at KEPT (indexes, leaf first) on top: those above the Python stack
    less the interpreter's own; EARLY: in the interpreter before py-spy's first sample
    of its thread; STALLED: in a stretch py-spy did not read (its native stack kept)."""

    sample: Sample
    python: tuple[str, ...]
    kept: tuple[int, ...]
    early: bool
    thread: str  # py-spy's name of the thread, "" when it has none
    stalled: bool = False


def place(
    samples: Iterable[Sample], timelines: dict[int, Timeline], slack: float = 0.0
) -> list[Placed]:
    """Each sample's place in the mixed stacks (see the module's docs); SLACK: how much
    earlier than the timelines' origin py-spy's clock may have started (the time Popen
    took)."""
    cut = [_cut(sample) for sample in samples]
    timelines = _aligned(cut, _by_os_thread(cut, timelines), slack)
    learned = _learn(cut, timelines)
    usual = _usual(learned)
    reach = _reach(cut, timelines, usual)
    by_thread: dict[int, list[_Split]] = {}
    for part in cut:
        by_thread.setdefault(part.sample.tid, []).append(part)
    along = _usual(_learn(cut, timelines, in_stalls=True))
    inferred: dict[int, tuple[str, ...]] = {}
    for tid, thread in timelines.items():
        inferred.update(_inferred(thread, by_thread.get(tid, []), _Stalls.of(thread), along))
    out = []
    for part in cut:
        timeline = timelines.get(part.sample.tid)
        python: tuple[str, ...] = ()
        stalled = id(part) in inferred
        if stalled:
            python = inferred[id(part)]
        elif timeline and part.spliced:
            python = _python_at(part, timeline, learned, usual, reach[part.sample.tid])
        early = not python and part.spliced and timeline and part.sample.time < timeline.times[0]
        name = timeline.name if timeline else ""
        kept = _kept_on_top(part.sample.frames, part.top) if python else ()
        out.append(Placed(part.sample, python, kept, bool(early), name, stalled and not python))
    return out


def splice(
    samples: Iterable[Sample], timelines: dict[int, Timeline], slack: float = 0.0
) -> Spliced:
    """The mixed stacks of the samples in py-spy's raw form, the early ones left out;
    the kernel frames perf took stay on top, as the agent keeps them. SLACK as place's."""
    out = Spliced(Counter(), 0)
    for placed in place(samples, timelines, slack):
        if placed.early:
            out.early += 1
            continue
        out.stalled += placed.stalled
        thread = f"thread ({placed.sample.tid})" + (f": {placed.thread}" if placed.thread else "")
        native = _native(_user(placed.sample.frames))
        kernel = _native([f for f in placed.sample.frames if f.dso == KERNEL])
        if placed.python:
            out.python += 1
            frames = (*placed.python, *(native[i] for i in reversed(placed.kept)))
        else:
            frames = tuple(reversed(native))
        out.lines[";".join((thread, *frames, *reversed(kernel)))] += 1
    return out


def _by_os_thread(cut: list[_Split], timelines: dict[int, Timeline]) -> dict[int, Timeline]:
    """The timelines keyed by OS thread id, those py-spy named by pthread id paired with
    the samples' threads (see the module's docs); one left unpaired is dropped."""
    named = {tid: t for tid, t in timelines.items() if tid < PID_MAX}
    unnamed = [t for tid, t in timelines.items() if tid >= PID_MAX]
    if not unnamed or not cut:
        return named
    times: dict[int, list[float]] = {}
    for part in cut:
        if part.sample.tid not in named:
            times.setdefault(part.sample.tid, []).append(part.sample.time)
    workers = [t for t in unnamed if _is_worker(t)]
    main = [t for t in unnamed if not _is_worker(t)]
    pid = cut[0].sample.pid
    if len(main) == 1 and pid in times:
        named[pid] = main[0]
        del times[pid]
    else:
        workers += main
    pairs = sorted(
        ((_running(t, when), i, tid) for i, t in enumerate(workers) for tid, when in times.items()),
        reverse=True,
    )
    for score, i, tid in pairs:
        if score and tid not in named and workers[i] not in named.values():
            named[tid] = workers[i]
    return named


def _is_worker(timeline: Timeline) -> bool:
    """A thread started by `threading`: its root frame is threading's `_bootstrap`."""
    root = next((stack[0] for stack in timeline.stacks if stack), "")
    return root.startswith(("_bootstrap (", "Thread._bootstrap (")) and "threading" in root


def _running(timeline: Timeline, times: list[float]) -> int:
    """How many of TIMES fall where the timeline has a Python stack."""
    return sum(1 for when in times if _at(timeline, when))


def _user(frames: tuple[NativeFrame, ...]) -> list[NativeFrame]:
    """Without kernel frames: py-spy reads user stacks only, and so did python mode."""
    return [f for f in frames if f.dso != KERNEL]


def _kept_on_top(frames: tuple[NativeFrame, ...], top: tuple[str, ...]) -> tuple[int, ...]:
    """The indexes in the user FRAMES (leaf first) of those above the Python stack (TOP,
    their raw text) that stay: not the interpreter's own functions, those in the eval
    loop's DSO but for KEPT_PREFIXES and the outermost COMPILER one, nor the C runtime's
    (libc's memcpy, ld.so's __tls_get_addr) they call, but for the system call a sample
    in the kernel was in (libc's write under the interpreter's file object: what the
    kernel's time is for).
    A stack perf could not unwind to the eval loop (from ld.so's __tls_get_addr, often)
    loses the C runtime frames it starts with: their caller is not known, the Python
    line is."""
    user = _user(frames)
    loop = next((f for f in user if f.symbol in EVAL_LOOP), None)
    suffix = f" ({loop.dso})" if loop else None
    kept: list[int] = []
    interpreter = True  # the eval loop called what comes next
    compiling = False
    for i in reversed(range(min(len(top), len(user)))):
        if suffix and top[i].endswith(suffix):
            entry = not compiling and user[i].symbol in COMPILER
            compiling = compiling or entry
            interpreter = not entry and _first_word(user[i].symbol) not in KEPT_PREFIXES
        elif not (interpreter and RUNTIME.match(top[i].rpartition(" (")[2])):
            interpreter = False
        if not interpreter:
            kept.append(i)
    in_kernel = len(user) < len(frames)
    if in_kernel and top and 0 not in kept:
        kept.append(0)
    return tuple(reversed(kept))


def _first_word(symbol: str) -> str:
    return next((w for w in re.split(r"[_.]", symbol) if w), "")


def _cut(sample: Sample) -> _Split:
    frames = _user(sample.frames)
    loop = next((i for i, f in enumerate(frames) if f.symbol in EVAL_LOOP), None)
    if loop is None:
        whole = any(f.symbol in ROOTS for f in frames)
        cut = () if whole else _native(frames)
        return _Split(sample, cut, cut[-1] if cut else "", not whole)
    top = frames[:loop]
    while top and top[-1].dso == "inlined" and top[-1].address == frames[loop].address:
        top.pop()  # inlined into the eval loop: its own code
    while top and GLUE.match(top[-1].symbol):
        top.pop()
    native = _native(top)
    return _Split(sample, native, native[-1] if native else "", True)


def _native(frames: list[NativeFrame] | tuple[NativeFrame, ...]) -> tuple[str, ...]:
    """Frames in py-spy's raw form, leaf first; an inlined one in its caller's DSO."""
    out = []
    for i, frame in enumerate(frames):
        dso = frame.dso
        if dso == "inlined":
            dso = next((f.dso for f in frames[i + 1 :] if f.dso != "inlined"), "?")
        out.append(f"{frame.symbol or f'0x{frame.address:x}'} ({dso})")
    return tuple(out)


def _candidates(timeline: Timeline, when: float, reach: float) -> list[tuple[str, ...]]:
    """The stacks the thread may have had at WHEN: the one py-spy's trace gives, then
    those of the changes it saw up to REACH (at most LAG) later, and the one before when
    a change was seen up to REACH (at most EARLY) before."""
    times, stacks = timeline.times, timeline.stacks
    first = bisect.bisect_left(times, when - min(reach, EARLY))
    last = bisect.bisect_right(times, when + min(reach, LAG))
    now = bisect.bisect_right(times, when) - 1
    seen = [now, *range(max(first - 1, 0), last)] if now >= 0 else list(range(first, last))
    out: list[tuple[str, ...]] = []
    for index in seen:
        if stacks[index] not in out:
            out.append(stacks[index])
    return out


def _aligned(
    cut: list[_Split], timelines: dict[int, Timeline], slack: float
) -> dict[int, Timeline]:
    """The timelines shifted by the offset under which the samples' native entries
    agree best with their Python leaf frames, of SHIFT_STEP steps from STAMPS_LATE +
    SLACK (at most MAX_SLACK) early to START_LATE + START_SLACK x SLACK late (unshifted
    when nothing tells).
    Stamps late by a varying amount make the best agreement flat over tens of ms: its
    middle is taken (its smaller end put 9 of 76 json samples of a run at load 24 under
    the wrong function, its middle none)."""
    slack = min(slack, MAX_SLACK)
    early = -(STAMPS_LATE + slack)
    late = START_LATE + START_SLACK * slack
    shifts = [early + i * SHIFT_STEP for i in range(round((late - early) / SHIFT_STEP) + 1)]
    scores = [_agreement(_learn(cut, _shifted(timelines, by))) for by in shifts]
    if max(scores) <= 0:
        return timelines
    return _shifted(timelines, _nearest_peak(shifts, scores, slack, late))


def _nearest_peak(shifts: list[float], scores: list[int], slack: float, late: float) -> float:
    """Of the stretches of offsets within NEAR_BEST of the best agreement, the one
    nearest the offsets the clocks allow without late stamps (SLACK early to LATE late;
    the better on a tie), and in it the middle of its best. The agreement cannot tell the
    right offset from one a whole turn of the program's alternation away: the mapping of
    C functions to Python ones is as consistent with the two swapped (see the module's
    docs)."""
    floor = NEAR_BEST * max(scores)
    stretches: list[list[int]] = []
    for i, score in enumerate(scores):
        if score < floor:
            continue
        if stretches and stretches[-1][-1] == i - 1:
            stretches[-1].append(i)
        else:
            stretches.append([i])

    def rank(stretch: list[int]) -> tuple[float, int]:
        away = min(max(-slack - shifts[i], shifts[i] - late, 0.0) for i in stretch)
        return away, -max(scores[i] for i in stretch)

    chosen = min(stretches, key=rank)
    top = max(scores[i] for i in chosen)
    tied = [shifts[i] for i in chosen if scores[i] == top]
    return tied[len(tied) // 2]


def _shifted(timelines: dict[int, Timeline], by: float) -> dict[int, Timeline]:
    return {
        tid: Timeline(t.name, [when + by for when in t.times], t.stacks)
        for tid, t in timelines.items()
    }


def _agreement(learned: Counter[tuple[str, str]]) -> int:
    """Samples whose native entry went with its most frequent Python leaf, less the rest."""
    by_entry: dict[str, list[int]] = {}
    for (entry, _leaf), count in learned.items():
        by_entry.setdefault(entry, []).append(count)
    return sum(2 * max(counts) - sum(counts) for counts in by_entry.values())


def _learn(
    cut: list[_Split], timelines: dict[int, Timeline], in_stalls: bool = False
) -> Counter[tuple[str, str]]:
    """(native entry, Python leaf frame of the trace's stack at its time) per sample, but
    for those in a stall of py-spy's unless IN_STALLS (_Stalls: the stack it holds there
    is not the thread's; at load 14, 700 of 1,500 samples were in stalls, and counting
    them put the best offset a whole turn of the program away)."""
    seen: Counter[tuple[str, str]] = Counter()
    stalls = {
        tid: frozenset() if in_stalls else _Stalls.of(timeline).starts
        for tid, timeline in timelines.items()
    }
    for part in cut:
        timeline = timelines.get(part.sample.tid)
        if timeline is None or not part.spliced or not part.entry:
            continue
        index = bisect.bisect_right(timeline.times, part.sample.time) - 1
        if index >= 0 and timeline.stacks[index] and index not in stalls[part.sample.tid]:
            seen[(part.entry, timeline.stacks[index][-1])] += 1
    return seen


def _at(timeline: Timeline, when: float) -> tuple[str, ...]:
    """The stack py-spy's trace gives for WHEN."""
    index = bisect.bisect_right(timeline.times, when) - 1
    return timeline.stacks[index] if index >= 0 else ()


def _usual(learned: Counter[tuple[str, str]]) -> dict[str, str]:
    """The Python leaf frame each native entry went with in USUAL_SHARE of its samples
    (at least USUAL_MIN of them)."""
    by_entry: dict[str, Counter[str]] = {}
    for (entry, leaf), count in learned.items():
        by_entry.setdefault(entry, Counter())[leaf] += count
    usual = {}
    for entry, leaves in by_entry.items():
        leaf, count = leaves.most_common(1)[0]
        if count >= USUAL_MIN and count >= USUAL_SHARE * sum(leaves.values()):
            usual[entry] = leaf
    return usual


def _reach(
    cut: list[_Split], timelines: dict[int, Timeline], usual: dict[str, str]
) -> dict[int, float]:
    """Per thread, how far from a sample's time its aligned trace may be wrong: at least
    an offset step and the trace's typical gap between changes (py-spy sees a change at
    its next read: 1 ms apart in python mode, 10 ms in the agent's), and as far (up to
    EARLY or LAG) as a sample whose native entry nearly always goes with one Python
    frame, given another by the trace, had to look for its own."""
    reach = {tid: SHIFT_STEP + _typical_gap(t.times) for tid, t in timelines.items()}
    for part in cut:
        leaf = usual.get(part.entry)
        timeline = timelines.get(part.sample.tid)
        if not leaf or timeline is None or not part.spliced:
            continue
        stack = _at(timeline, part.sample.time)
        if stack and stack[-1] != leaf:
            away = _away(timeline, part.sample.time, leaf)
            if away <= max(EARLY, LAG):
                reach[part.sample.tid] = max(reach[part.sample.tid], away)
    return reach


def _typical_gap(times: list[float]) -> float:
    """The median time between a thread's changes (0 with none)."""
    steps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    return steps[len(steps) // 2] if steps else 0.0


def _away(timeline: Timeline, when: float, leaf: str) -> float:
    """How far WHEN is from the nearest stretch of the trace whose stack's leaf is LEAF,
    looked for within FAR (inf when none)."""
    times, stacks = timeline.times, timeline.stacks
    first = max(bisect.bisect_left(times, when - FAR) - 1, 0)
    last = bisect.bisect_right(times, when + FAR)
    return min(
        (
            max(times[i] - when, when - times[min(i + 1, len(times) - 1)], 0.0)
            for i in range(first, last)
            if stacks[i] and stacks[i][-1] == leaf
        ),
        default=float("inf"),
    )


def _python_at(
    part: _Split,
    timeline: Timeline,
    learned: Counter[tuple[str, str]],
    usual: dict[str, str],
    reach: float,
) -> tuple[str, ...]:
    """The candidate stack the sample's native entry went with most, when SWITCH times
    as often as with py-spy's own; else, when it went with none and nearly always goes
    with one Python frame, the nearest stack with it; else py-spy's own."""
    stacks = _candidates(timeline, part.sample.time, reach)
    if part.entry:
        scores = [learned[(part.entry, s[-1])] if s else 0 for s in stacks]
        best = max(scores, default=0)
        if best and scores.count(best) == 1 and best > SWITCH * scores[0]:
            return stacks[scores.index(best)]
        if not best and part.entry in usual:
            near = _nearest_with(timeline, part.sample.time, usual[part.entry])
            if near:
                return near
    return stacks[0] if stacks else ()


def _nearest_with(timeline: Timeline, when: float, leaf: str, far: float = FAR) -> tuple[str, ...]:
    """The stack nearest WHEN (within FAR) whose leaf frame is LEAF, or ()."""
    times, stacks = timeline.times, timeline.stacks
    first = max(bisect.bisect_left(times, when - far) - 1, 0)
    last = bisect.bisect_right(times, when + far)
    near = [i for i in range(first, last) if stacks[i] and stacks[i][-1] == leaf]
    return stacks[min(near, key=lambda i: abs(times[i] - when))] if near else ()


@dataclass(frozen=True)
class _Stalls:
    """A thread's stalls of py-spy: stretches of its trace without a change longer than
    twice BOUND, STALL_STEPS of its typical gap between changes (the median: at least
    py-spy's sampling interval; never less than STALL_MIN), keyed by the index of the
    change that starts each."""

    timeline: Timeline
    bound: float
    starts: frozenset[int]

    @classmethod
    def of(cls, timeline: Timeline) -> _Stalls:
        times = timeline.times
        bound = max(STALL_STEPS * _typical_gap(times), STALL_MIN)
        starts = frozenset(i for i in range(len(times) - 1) if times[i + 1] - times[i] > 2 * bound)
        return cls(timeline, bound, starts)

    def start_of(self, when: float) -> int | None:
        """The stall WHEN falls in, by the index of the change that starts it."""
        start = bisect.bisect_right(self.timeline.times, when) - 1
        return start if start in self.starts else None


def _function(stack: tuple[str, ...]) -> tuple[str, ...]:
    """The stack with its leaf's line left out: the Python function running, as called."""
    return (*stack[:-1], LINE.sub(")", stack[-1])) if stack else ()


@dataclass
class _Seen:
    """What a thread's trace says outside its stalls: how often each native entry went
    with each Python function (EMITS: function -> entry -> samples) and with each of its
    stacks (STACKS: (function, entry) -> stack -> samples; ANY: function -> stack ->
    samples), and how long the thread stays in one function (STAY, seconds)."""

    emits: dict[tuple[str, ...], Counter[str]]
    stacks: dict[tuple[tuple[str, ...], str], Counter[tuple[str, ...]]]
    any: dict[tuple[str, ...], Counter[tuple[str, ...]]]
    stay: float

    @classmethod
    def of(cls, timeline: Timeline, parts: list[_Split], stalls: _Stalls) -> _Seen:
        emits: dict[tuple[str, ...], Counter[str]] = {}
        stacks: dict[tuple[tuple[str, ...], str], Counter[tuple[str, ...]]] = {}
        any_stack: dict[tuple[str, ...], Counter[tuple[str, ...]]] = {}
        for part in parts:
            if not part.spliced or stalls.start_of(part.sample.time) is not None:
                continue
            stack = _at(timeline, part.sample.time)
            if stack:
                function = _function(stack)
                emits.setdefault(function, Counter())[part.entry] += 1
                stacks.setdefault((function, part.entry), Counter())[stack] += 1
                any_stack.setdefault(function, Counter())[stack] += 1
        return cls(emits, stacks, any_stack, _stay(timeline, stalls))

    def stack(self, function: tuple[str, ...], entry: str) -> tuple[str, ...]:
        """The stack of FUNCTION the ENTRY went with most (its most frequent else)."""
        seen = self.stacks.get((function, entry)) or self.any[function]
        return seen.most_common(1)[0][0]


def _stay(timeline: Timeline, stalls: _Stalls) -> float:
    """The mean time between changes of the Python function outside the stalls."""
    times, stacks = timeline.times, timeline.stacks
    spent, changes = 0.0, 0
    for i in range(len(times) - 1):
        if i not in stalls.starts:
            spent += times[i + 1] - times[i]
            changes += _function(stacks[i]) != _function(stacks[i + 1])
    return max(spent / max(changes, 1), SHIFT_STEP)


def _inferred(
    timeline: Timeline, parts: list[_Split], stalls: _Stalls, usual: dict[str, str]
) -> dict[int, tuple[str, ...]]:
    """The stack of each sample (by id) in a stall: the one the stall holds when a C
    call holds it (_held), else inferred (_in_stall), () for one left native."""
    inside: dict[int, list[_Split]] = {}
    for part in parts:
        start = stalls.start_of(part.sample.time)
        if start is not None and part.spliced:
            inside.setdefault(start, []).append(part)
    seen = _Seen.of(timeline, parts, stalls) if inside else None
    out: dict[int, tuple[str, ...]] = {}
    for start, stalled in inside.items():
        stack = timeline.stacks[start]
        if _held(stack, stalled, usual):
            out.update((id(part), stack) for part in stalled)
        elif seen:
            out.update(_in_stall(timeline, start, stalled, seen))
    return out


def _held(stack: tuple[str, ...], parts: list[_Split], usual: dict[str, str]) -> bool:
    """Whether the samples of a stall that holds STACK are one long C call: nearly all
    (USUAL_SHARE) of those in a C function are in one that nearly always goes with
    STACK's leaf over the whole run, the stall's samples included (USUAL: json's
    `encoder_call` under `iterencode` through 2.7 s on CPython 3.9, where py-spy saw
    that one stack nearly all the run)."""
    called = [part for part in parts if part.entry]
    along = sum(1 for part in called if stack and usual.get(part.entry) == stack[-1])
    return along > 0 and along >= USUAL_SHARE * len(called)


def _in_stall(
    timeline: Timeline, start: int, parts: list[_Split], seen: _Seen
) -> dict[int, tuple[str, ...]]:
    """The samples of the stall from the change START (py-spy's trace holds its last
    stack, which is not the thread's): the Python function each was in is inferred from
    the native entries of them all, a hidden Markov chain whose states are the thread's
    functions (those seen outside the stalls and the stall's two ends), each giving the
    entries in the proportions seen with it outside the stalls, and staying in one for
    its mean stay (_Seen.stay): forward and backward from the stall's two ends, which
    py-spy saw. A sample takes the function it was in with a chance of at least
    CERTAIN (and its stack that went with its entry most); any other keeps its native
    frames. So a C function that tells its caller (`zlib_compress` under `pack_logs`,
    crunch's `_PyLong_Multiply`) places itself and the samples around it that run what
    that function runs, and a stretch nothing tells apart stays native in its middle."""
    times, stacks = timeline.times, timeline.stacks
    ends = (_function(stacks[start]), _function(stacks[start + 1]))
    states = sorted(seen.emits)
    if not states:
        return {id(part): () for part in parts}
    index = {state: i for i, state in enumerate(states)}
    overall = sum(seen.emits.values(), Counter())
    emit = [_emission(seen.emits[state], len(overall)) for state in states]
    total = overall.total()
    share = [seen.emits[state].total() / total for state in states]
    whens = [times[start], *(part.sample.time for part in parts), times[start + 1]]
    moves = [_moves(b - a, seen.stay) for a, b in zip(whens, whens[1:], strict=False)]
    likely = [[emit[i](part.entry) for i in range(len(states))] for part in parts]
    forward = _pinned(share, index.get(ends[0]))
    ahead = []
    for move, chances in zip(moves, likely, strict=False):
        went = [(1.0 - move) * a + move * s for a, s in zip(forward, share, strict=True)]
        forward = _normal([a * b for a, b in zip(went, chances, strict=True)])
        ahead.append(forward)
    backward = _pinned(share, index.get(ends[1]))
    out: dict[int, tuple[str, ...]] = {}
    for k in reversed(range(len(parts))):
        anywhere = sum(s * b for s, b in zip(share, backward, strict=True))
        backward = _normal([(1.0 - moves[k + 1]) * b + moves[k + 1] * anywhere for b in backward])
        chance = _normal([a * b for a, b in zip(ahead[k], backward, strict=True)])
        best = max(range(len(states)), key=chance.__getitem__)
        python = seen.stack(states[best], parts[k].entry) if chance[best] >= CERTAIN else ()
        out[id(parts[k])] = python
        backward = [a * b for a, b in zip(backward, likely[k], strict=True)]
    return out


def _emission(entries: Counter[str], kinds: int) -> Callable[[str], float]:
    """The chance a function gives each entry: as seen with it, each of the KINDS of
    entries seen at all (and one never seen) taken to have been seen EMIT_PRIOR more."""
    total = entries.total() + EMIT_PRIOR * (kinds + 1)
    return lambda entry: (entries[entry] + EMIT_PRIOR) / total


def _pinned(share: list[float], state: int | None) -> list[float]:
    """Certain of STATE when known, else each state by its SHARE of the samples."""
    if state is None:
        return list(share)
    return [float(i == state) for i in range(len(share))]


def _moves(apart: float, stay: float) -> float:
    """The chance the thread left its function in APART seconds (to any, by share)."""
    return 1.0 - math.exp(-apart / stay)


def _normal(chances: list[float]) -> list[float]:
    total = sum(chances)
    return [c / total for c in chances] if total > 0 else [1.0 / len(chances)] * len(chances)
