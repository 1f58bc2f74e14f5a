"""Wall-clock profiling: periodic stack snapshots of every thread through ptrace.

One wallsnap process (collect/wallsnap.py) runs for the whole recording: each
snapshot, at the instants of a Poisson process, interrupts every thread of the
target and its child processes at one instant, copies each one's registers and
stack top as it stops and lets it go, then unwinds the copies with DWARF call-frame
information and prints raw module offsets with whether the thread was inside a
system call; perfsleuth symbolizes everything once at the end. Where wallsnap cannot be
built, each snapshot runs one `eu-stack` (elfutils) per process instead, which
stops the threads one after another, after the kernel's view of each (state
letter, wchan, name) was read from /proc. A thread in a wallsnap snapshot is given
the mean time between snapshots (in an eu-stack one, the time since the previous
snapshot), so the profile's unit is ns and its totals are wall time per thread.

No root needed for one's own processes; a process that exits mid-recording
keeps every snapshot taken so far.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ..binaries import find_dso
from ..errors import UserError
from ..formats.tool_output import eu_stack
from ..formats.tool_output import wallsnap as wallsnap_output
from ..model.profile import Frame, Profile, ProfileBuilder, Thread
from ..model.run import Recording
from ..model.states import NOT_WAITING_READ, RUNNABLE_IN_FUTEX
from ..symbols import KERNEL_DSO, UNKNOWN, Symbolizer, dso_name, elf_info
from ..symbols.function_starts import unnamed_frame
from . import thread_state, wallsnap
from .options import RecordOptions
from .target import Target, children_of

DEFAULT_RATE_HZ = 50  # wallsnap: a short program still gets a few hundred samples
EU_STACK_RATE_HZ = 10  # an eu-stack run per process per snapshot costs ~20-80 ms
SYSTEM_DIRS = ("/usr/lib/", "/lib/", "/usr/lib64/", "/lib64/")
EU_STACK_TIMEOUT_S = 20.0
# glibc's pthread mutex lock entry points: a thread waiting in one waits on a mutex
# whose __owner field wallsnap reads (OWNER)
GLIBC_MUTEX_LOCKS = (
    "pthread_mutex_lock",
    "___pthread_mutex_lock",
    "__pthread_mutex_lock",
    "__pthread_mutex_lock_full",
    "pthread_mutex_timedlock",
    "__pthread_mutex_clocklock_common",
)


SYS_FUTEX = 202  # x86-64's, the only architecture wallsnap reads registers of


@dataclass(frozen=True)
class TaskInfo:
    name: str
    state: str  # /proc stat letter
    wchan: str  # kernel function the thread sleeps in, "" if unknown
    owner: int = 0  # wallsnap's OWNER: the holder of the glibc mutex it waits on, if it does
    timeout_ms: int | None = None  # wallsnap's TIMEOUT: a wait for events' timeout, -1 none
    syscall: int | None = None  # wallsnap's STATE: the system call it was stopped in
    nonblocking: bool = False  # wallsnap's NONBLOCKING: in a read that could not wait
    ran_ns: int | None = None  # /proc's schedstat: its time on a CPU so far (None: unknown)


@dataclass
class Snapshot:
    weight_ns: float
    threads: list[eu_stack.EuThread]
    tasks: dict[int, TaskInfo]
    one_instant: bool = False  # wallsnap's: every stack and state of the same instant
    time_ns: int = 0  # that instant (CLOCK_MONOTONIC)
    pass_ns: int = 0  # how long interrupting them took: the last ones' instant is later


@dataclass(frozen=True)
class ThreadSample:
    """One thread in one snapshot, symbolized and classified."""

    snapshot: Snapshot
    thread: Thread
    frames: list[Frame]
    state: str


def eu_stack_binary() -> str:
    tool = shutil.which("eu-stack")
    if tool is None:
        raise UserError(
            "wall-clock recording needs eu-stack; install it with `apt-get install elfutils`"
        )
    return tool


def read_tasks(pid: int) -> dict[int, TaskInfo]:
    """tid -> name, state, wchan and time on a CPU of every thread of pid (empty once it
    is gone)."""
    out: dict[int, TaskInfo] = {}
    base = Path(f"/proc/{pid}/task")
    try:
        tids = [int(t.name) for t in base.iterdir()]
    except (OSError, ValueError):
        return out
    for tid in tids:
        try:
            stat = (base / str(tid) / "stat").read_text(errors="replace")
            name = (base / str(tid) / "comm").read_text(errors="replace").strip()
        except OSError:
            continue
        state = stat.rpartition(")")[2].split()[0] if ")" in stat else ""
        task = base / str(tid)
        out[tid] = TaskInfo(name, state, _wchan(task), ran_ns=_ran_ns(task))
    return out


def _ran_ns(task: Path) -> int | None:
    try:
        return int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _wchan(task: Path) -> str:
    try:
        value = (task / "wchan").read_text(errors="replace").strip()
    except OSError:
        return ""
    return "" if value in ("0", "") else value


def take_snapshot(tool: str, pid: int) -> tuple[list[eu_stack.EuThread], dict[int, TaskInfo]]:
    """Stacks and kernel state of every thread of pid and its child processes."""
    stacks: list[eu_stack.EuThread] = []
    tasks: dict[int, TaskInfo] = {}
    for proc in [pid, *children_of(pid)]:
        tasks.update(read_tasks(proc))
        try:
            done = subprocess.run(
                [tool, "-p", str(proc), "-b", "-q", "-m"],
                capture_output=True,
                text=True,
                timeout=EU_STACK_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            continue
        found = eu_stack.parse(done.stdout)
        if any(t.tid not in tasks for t in found):  # threads started since read_tasks
            tasks = {**read_tasks(proc), **tasks}
        stacks.extend(found)
        if done.returncode == 2 and not stacks and "Operation not permitted" in done.stderr:
            raise UserError(
                f"cannot ptrace process {proc}: not permitted; record your own processes, "
                "or run as root (check kernel.yama.ptrace_scope)"
            )
    return stacks, tasks


class WallRecorder:
    """Snapshots a target at a fixed rate until it exits or the duration ends."""

    def __init__(self, tool: str, target: Target, rate_hz: float) -> None:
        self.tool = tool
        self.target = target
        self.interval = 1.0 / rate_hz
        self.snapshots: list[Snapshot] = []
        self._last = 0.0

    def tick(self) -> None:
        now = time.monotonic()
        if self._last and now - self._last < self.interval:
            return
        weight = (now - self._last if self._last else self.interval) * 1e9
        self._last = now
        threads, tasks = take_snapshot(self.tool, self.target.pid)
        if threads:
            self.snapshots.append(Snapshot(weight, threads, tasks))


def to_profile(snapshots: list[Snapshot], symbolizer: Symbolizer | None = None) -> Profile:
    builder = ProfileBuilder(unit="ns")
    samples = list(thread_samples(snapshots, symbolizer))
    for sample in samples:
        weight = sample.snapshot.weight_ns
        builder.add(sample.frames, weight, thread=sample.thread, state=sample.state)
    profile = builder.build()
    if any(snap.one_instant for snap in snapshots):  # wallsnap's: the holders are known
        profile.meta["lock_holders"] = lock_holders(samples)
        profile.meta["wait_timeouts"] = wait_timeouts(samples)
    return profile


def wait_timeouts(samples: list[ThreadSample]) -> list[list]:
    """The timeouts the threads waiting for events passed (wallsnap's TIMEOUT):
    [tid, timeout in ms (-1: none), ns] per distinct pair. A poll loop and a blocking
    wait for events have the same stacks; this tells them apart (io_and_sleep_waits.py)."""
    pairs: dict[tuple[int, int], float] = {}
    for s in samples:
        task = s.snapshot.tasks.get(s.thread.tid)
        if task is None or task.timeout_ms is None or s.state not in ("io", "sleep"):
            continue
        key = (s.thread.tid, task.timeout_ms)
        pairs[key] = pairs.get(key, 0.0) + s.snapshot.weight_ns
    return [[tid, ms, ns] for (tid, ms), ns in pairs.items()]


def lock_holders(samples: list[ThreadSample]) -> list[list]:
    """What the holder of a glibc mutex ran while another thread waited on it, at the
    same instants: [waiter's functions (leaf first), holder's [function, dso, file]
    frames (leaf first, no kernel frames), ns] per distinct pair of stacks. The code
    under the lock, not merely code of the same function (lock_contention.py).
    wallsnap names a holder only where it saw it hold that mutex as it stopped. A
    holder itself waiting on a mutex, or blocked in a condition wait (which lets its
    mutex go; a notify under the lock does not block and is kept), is left out: the
    lock changed hands between the instant and the waiter's stop, or it is a nested
    lock."""
    by_tid = {(id(s.snapshot), s.thread.tid): s for s in samples}
    pairs: dict[tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]], float] = {}
    for s in samples:
        owner = s.snapshot.tasks[s.thread.tid].owner if s.thread.tid in s.snapshot.tasks else 0
        holder = by_tid.get((id(s.snapshot), owner))
        if s.state != "mutex" or holder is None or holder is s or _waiting(holder):
            continue
        if not any(f.function.split("(", 1)[0] in GLIBC_MUTEX_LOCKS for f in s.frames):
            continue  # OWNER is a glibc mutex's only
        key = (
            tuple(f.function for f in s.frames),
            tuple((f.function, f.dso, f.file) for f in holder.frames if not f.kernel),
        )
        pairs[key] = pairs.get(key, 0.0) + s.snapshot.weight_ns
    return [[list(w), [list(f) for f in h], ns] for (w, h), ns in pairs.items()]


def _waiting(holder: ThreadSample) -> bool:
    task = holder.snapshot.tasks.get(holder.thread.tid)
    blocked = task is not None and task.state == "S"
    return holder.state == "mutex" or (holder.state == "condvar" and blocked)


def thread_samples(
    snapshots: list[Snapshot], symbolizer: Symbolizer | None = None
) -> Iterator[ThreadSample]:
    symbols = _symbolize(snapshots, symbolizer or Symbolizer())
    names = _last_names(snapshots)
    for snap in snapshots:
        for t in snap.threads:
            task = snap.tasks.get(t.tid, TaskInfo(name="", state="", wchan=""))
            if not snap.one_instant and _not_started(task, t):
                continue
            if not snap.one_instant and t.frames and _in_program(t.frames[0]):
                # back in the program's own code: it woke up since /proc was read
                task = TaskInfo(name=task.name, state="R", wchan="")
            frames = kernel_frames(task, snap.one_instant)
            for f in t.frames:
                frames.extend(symbols.get(_place(f), (Frame(UNKNOWN, dso=_dso(f)),)))
            if snap.one_instant:  # the stack says what the thread was doing then
                state = thread_state.classify(frames, task.state)
            else:
                state = snapshot_state(frames, task.state)
            yield ThreadSample(snap, Thread(t.tid, t.pid, names.get(t.tid, "")), frames, state)


def _not_started(task: TaskInfo, thread: eu_stack.EuThread) -> bool:
    """A thread of an eu-stack snapshot that had never run when /proc was read and shows
    none of the program's code: created, waiting for its first CPU. None of its code has
    run, so the program's clock cannot count that wait, and wallsnap leaves such a thread
    out; the fallback read it `running` (futpool's std::async workers on 2 busy CPUs)."""
    return task.ran_ns == 0 and not any(_in_program(f) for f in thread.frames)


def kernel_frames(task: TaskInfo, one_instant: bool) -> list[Frame]:
    """The kernel frame wall mode can name: /proc's wchan (eu-stack's snapshots), or for a
    thread wallsnap stopped runnable in a futex call it had completed, RUNNABLE_IN_FUTEX
    (off the CPU: library_match leaves it out of the time on the CPU), or in a read that
    could not wait, NOT_WAITING_READ (at the read's work, as a kernel stack there says)."""
    if task.wchan:
        return [Frame(task.wchan, dso=KERNEL_DSO, kernel=True)]
    if one_instant and task.state == "R" and task.syscall == SYS_FUTEX:
        return [Frame(RUNNABLE_IN_FUTEX, dso=KERNEL_DSO, kernel=True)]
    if one_instant and task.state == "R" and task.nonblocking:
        return [Frame(NOT_WAITING_READ, dso=KERNEL_DSO, kernel=True)]
    return []


def _last_names(snapshots: list[Snapshot]) -> dict[int, str]:
    """Each thread's name in the last snapshot that saw it: a thread that renames itself
    (GLib's g_thread_new, pthread_setname_np) was two threads in `perfsleuth threads`,
    its first snapshots under the program's name; offcpu and all modes follow renames."""
    return {tid: task.name for snap in snapshots for tid, task in snap.tasks.items() if task.name}


def snapshot_state(frames: list[Frame], kernel_state: str) -> str:
    """The state of a thread in a snapshot. A thread the kernel saw runnable just
    before is running, whatever its stack shows by the time it is stopped: eu-stack
    stops threads one after another, and one stopped inside a critical section makes
    the next ones block on its lock; and a runnable thread inside an I/O call may be
    doing the call's work on a CPU. Except inside a sleep: no work is done there, the
    thread was woken and waits for a CPU, which the program's own timing of the
    sleep counts as the sleep's (a poller on a busy machine spends most of its
    cycle there, runnable in usleep).
    """
    state = thread_state.classify(frames, kernel_state)
    return "running" if kernel_state == "R" and state != "sleep" else state


def from_wallsnap(text: str, rate_hz: float) -> list[Snapshot]:
    """wallsnap's output as snapshots, each weighted by the mean time between them
    (the interval when there is one). Not by the time since the one before: wallsnap's
    instants are a Poisson process, whose share of snapshots finding a state is the
    share of time in it, the snapshots' own aftermath included; a short gap finds the
    program still disturbed by the snapshot before, and weighting by the gap would
    give those findings less than their share."""
    parsed = wallsnap_output.parse(text)
    weight = mean_gap_ns(parsed) or 1e9 / rate_hz
    snapshots = []
    for snap in parsed:
        if not snap.threads:
            continue
        tasks = {
            tid: TaskInfo(s.name, s.state, "", s.owner, s.timeout_ms, s.syscall, s.nonblocking)
            for tid, s in snap.states.items()
        }
        snapshots.append(Snapshot(weight, snap.threads, tasks, True, snap.time_ns, snap.pass_ns))
    return snapshots


def mean_gap_ns(snapshots: list[wallsnap_output.WallSnapshot]) -> float:
    """The mean time between the snapshots' instants; 0 with fewer than two."""
    if len(snapshots) < 2:
        return 0.0
    return (snapshots[-1].time_ns - snapshots[0].time_ns) / (len(snapshots) - 1)


def _in_program(f: eu_stack.EuFrame) -> bool:
    """A frame in the program's own files rather than a system library: a thread
    does not block there (it blocks in a libc system call wrapper)."""
    return f.module.startswith("/") and not f.module.startswith(SYSTEM_DIRS)


def _place(f: eu_stack.EuFrame) -> tuple[str, int]:
    return (f.module, f.offset if f.offset is not None else -1)


def _dso(f: eu_stack.EuFrame) -> str:
    return Path(f.module).name if f.module else ""


def _symbolize(
    snapshots: list[Snapshot], symbolizer: Symbolizer
) -> dict[tuple[str, int], tuple[Frame, ...]]:
    """(module, offset) -> inline chain; eu-stack's offsets are from the module's
    lowest mapped address, which is ELF address 0 for PIE and shared objects."""
    build_ids: dict[str, str] = {}
    by_vaddr: dict[tuple[str, int], tuple[str, int]] = {}
    for snap in snapshots:
        for t in snap.threads:
            for f in t.frames:
                if f.offset is None or not f.module.startswith("/"):
                    continue
                build_ids[f.module] = f.build_id
                by_vaddr[(f.module, f.offset + _load_base(f.module))] = _place(f)
    found = symbolizer.symbolize_vaddrs(sorted(by_vaddr), build_ids)
    unnamed = (Frame(UNKNOWN),)
    return {
        place: (_unnamed(key, build_ids[key[0]]),)
        if found.get(key, unnamed)[0].function == UNKNOWN
        else found[key]
        for key, place in by_vaddr.items()
    }


def _unnamed(place: tuple[str, int], build_id: str) -> Frame:
    """A frame the symbolizer could not name: "[unknown] DSO+0xSTART", as perf's are
    (a stripped program's lock call site is its function then, not clone3)."""
    module, vaddr = place
    return unnamed_frame(find_dso(module, build_id), dso_name(module), vaddr, build_id)


def _load_base(path: str) -> int:
    info = elf_info(path)
    if info is None or not info.segments:
        return 0
    return min(vaddr for _off, _size, vaddr, _mem in info.segments) & ~0xFFF


def record_wall(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """Recorder for --mode wall (see commands/record.py)."""
    tool = wallsnap.binary()
    rate = options.freq or (DEFAULT_RATE_HZ if tool else EU_STACK_RATE_HZ)
    if not 0 < rate <= 1000:
        raise UserError("--freq for wall mode is snapshots per second, between 1 and 1000")
    if tool is None:
        print(
            "perfsleuth: wallsnap could not be built (it needs a C compiler and libdw-dev); "
            "taking snapshots with eu-stack, which stops threads one after another",
            file=sys.stderr,
        )
        return record_with_eu_stack(options, cmd, rate)
    target = Target.of(cmd, options.pid)
    started = time.monotonic()
    target.release()
    snapper = wallsnap.Snapshotter(tool, target.pid, rate, workdir / "wallsnap.txt")
    try:
        target.wait(_duration(options), tick=snapper.check, interval=0.05)
    except wallsnap.Ended:
        pass  # stop() says how, and keeps the snapshots taken until then
    finally:
        text = snapper.stop()
    snapshots = from_wallsnap(text, rate)
    wake = wallsnap_output.wake(text)
    if wake == "ordinary":
        print(
            "perfsleuth: wallsnap ran at an ordinary priority (neither realtime nor a short "
            "scheduler slice was allowed): where the program keeps every CPU busy, its "
            "snapshots over-read waiting (docs/offcpu.md)",
            file=sys.stderr,
        )
    meta = {"recorder": "wallsnap", "pid": target.pid, "freq": rate, "wake": wake}
    return _recording(snapshots, target, time.monotonic() - started, meta)


def record_with_eu_stack(options: RecordOptions, cmd: list[str], rate: float) -> Recording:
    """Wall mode where wallsnap cannot be built: one eu-stack per process and snapshot."""
    tool = eu_stack_binary()
    target = Target.of(cmd, options.pid)
    recorder = WallRecorder(tool, target, rate)
    started = time.monotonic()
    target.release()
    target.wait(_duration(options), tick=recorder.tick, interval=0.005)
    meta = {"recorder": "eu-stack", "pid": target.pid, "freq": rate}
    return _recording(recorder.snapshots, target, time.monotonic() - started, meta)


def _duration(options: RecordOptions) -> float | None:
    return options.duration or 10.0 if options.pid else None


def _recording(snapshots: list[Snapshot], target: Target, elapsed: float, meta: dict) -> Recording:
    if not snapshots:
        raise UserError(
            "no stack snapshot was taken (the process ended first, or ptrace failed); "
            "record a longer-running program or raise --freq"
        )
    profile = to_profile(snapshots)
    profile.dsos = _modules(snapshots)
    profile.meta["recorder"] = meta["recorder"]
    meta["snapshots"] = len(snapshots)
    return Recording(profile, exit_status=target.exit_status, duration_s=elapsed, meta=meta)


def _modules(snapshots: list[Snapshot]) -> list[dict]:
    """{"path", "build_id"} of every module seen in a stack, as Profile.dsos."""
    found = {
        f.module: f.build_id
        for snap in snapshots
        for t in snap.threads
        for f in t.frames
        if f.module.startswith("/")
    }
    return [{"path": p, "build_id": b} for p, b in sorted(found.items())]


def record_wall_instead(
    options: RecordOptions, cmd: list[str], workdir: Path, *, reason: str
) -> Recording:
    """--fallback-wall: off-CPU recording is not possible, take wall snapshots."""
    print(
        f"perfsleuth: {reason.split(';')[0]}; recording wall-clock snapshots instead",
        file=sys.stderr,
    )
    recording = record_wall(options, cmd, workdir)
    return replace(recording, mode="wall", meta={**recording.meta, "fallback": reason})
