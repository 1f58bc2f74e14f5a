"""Off-CPU time with eBPF: how long each thread was blocked, and where.

bpftrace runs a script on the sched:sched_switch tracepoint. When a thread of
the target (or of a child process) is switched out, its kernel and user stacks
and scheduler state are kept; when it is switched back in, the time it spent
off the CPU is added to (pid, tid, state, kernel stack, user stack, name). The
kernel aggregates everything; perfsleuth reads one map when bpftrace stops.
Needs root (or CAP_BPF + CAP_PERFMON) and a kernel with BPF and tracepoints.

User stacks come from the kernel's frame-pointer walk: the leaf is exact, but
libc and libstdc++ keep no frame pointers, so the program frame that called
into them is lost. `--mode all` adds perf's on-CPU samples (cpu-clock, whose
period is in ns) so running and waiting add up to each thread's wall time, and
completes the cut off-CPU stacks from the on-CPU DWARF ones (Completions).
Both modes fall back to wall-clock snapshots with --fallback-wall.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import UserError
from ..formats import perf_data
from ..formats.tool_output import bpftrace_stacks, perf_switches
from ..model.profile import Frame, Profile, ProfileBuilder, Thread
from ..model.run import Recording
from ..symbols import KERNEL_DSO, UNKNOWN, Symbolizer, dso_name, elf_info
from ..symbols.function_starts import unnamed_frame
from ..symbols.missing import is_unknown
from . import oncpu_time, perf, thread_state, wall
from .options import RecordOptions
from .target import ProcessMaps, Target, spawn, stop

# $1: the target's PID; $2: 1 to follow it from the start, 0 to wait for its exec
# (a launched command is a gate shell until then).
# Every block is timed into @blocked[tgid, tid, state, length class] or, when its
# stacks were sampled, into @offcpu[tgid, tid, state, length class, weight,
# kernel stack, user stack]: the two maps add up to the exact blocked time per
# thread and state. Stacks cost microseconds each, so a switch-out captures them
# only one time in SAMPLE_EVERY (weight SAMPLE_EVERY), or always (weight 1) for a
# thread's first ALWAYS_FIRST blocks and when its last capture of a block is older than
# FORCE_AFTER_NS: every block of a short-lived thread or process, or of one that
# seldom blocks. A preemption (or a yield) is no block here: it neither counts nor
# captures always. It did, and a thread preempted every few ms on a loaded machine had
# its one long block drawn 1 time in 8, else kept without stacks ("other"): the main
# thread of a Rust program waiting 2.4 s in rayon's pool, condvar in wall and all
# modes. The length class keeps a rare long block whose stacks were not drawn from
# being spread over a busy thread's short ones; a block over LONG_NS not drawn goes
# to @long[tgid, tid, state, length class, futex, return address, user leaf]
# instead, with the registers' leaf for its stack. Thread names come from
# fork, exec and renames, not from the aggregation key (a string there makes every
# update slower). FUTEX_KIND says, for a sampled block, whether the thread was in a
# futex wait and of which kind (FUTEX_KINDS), read from the system call's registers
# (x86-64 with the kernel's BTF; else 0): the stack cut in libc cannot tell a
# condition variable's wait (a private futex) from pthread_join's (a shared one).
# The state in the maps' keys also carries the futex wait's operation (WAIT_CLASSES,
# above the scheduler's bits): glibc's lock waits are FUTEX_WAIT, its condition
# variables', semaphores' and joins' FUTEX_WAIT_BITSET, so a lock wait's time not drawn
# is spread over lock waits' stacks only. Keyed by the scheduler state alone, GNU
# sort's merge threads (a node mutex and a queue condvar, blocks of the same lengths)
# had one thread in 13 read 3-6 points of its mutex waiting as condvar (all mode, 5
# runs at load 10): the class's one stack drawn at random took all its time.
SCRIPT = r"""
BEGIN { if ($2) { @pids[(int64)$1] = 1; } printf("READY\n"); }
tracepoint:sched:sched_process_exec /pid == $1/
{
  @pids[(int64)pid] = 1;
  @names[tid] = comm;
  RUN_AT_EXEC
}
tracepoint:sched:sched_process_fork /@pids[(int64)pid]/
{
  @pids[(int64)args->child_pid] = 1;
  @names[args->child_pid] = comm;
  RUN_AT_FORK
}
tracepoint:task:task_rename /@pids[(int64)pid]/ { @names[args->pid] = args->newcomm; }
tracepoint:sched:sched_switch
{
  if (pid == $1 || @pids[(int64)pid]) {
    RUN_ENDS
    $before = @out[args->prev_pid];
    $blocks = (args->prev_state & 255) != 0 && (args->prev_state & PREEMPTED_STATE) == 0;
    $always = $blocks && ($before.5 < ALWAYS_FIRST || nsecs - $before.4 > FORCE_AFTER_NS);
    $weight = $always ? 1 : (rand % SAMPLE_EVERY == 0 ? SAMPLE_EVERY : 0);
    FUTEX_KIND
    RETURN_ADDRESS
    LEAF_ADDRESS
    @out[args->prev_pid] = (nsecs, args->prev_state | ($blocks ? WAIT_CLASS : 0), pid, $weight,
                            $weight && $blocks ? nsecs : $before.4,
                            $before.5 + ($blocks ? 1 : 0), $futex, $ret, $ip);
    if ($weight) {
      @stacks[args->prev_pid] = (kstack(MAX_DEPTH), ustack(MAX_DEPTH), $futex, $ret);
    }
  }
  $out = @out[args->next_pid];
  RUN_STARTS
  if ($out.0) {
    $tid = args->next_pid;
    $ns = nsecs - $out.0;
    $length = LENGTH_CLASS;
    if ($out.3) {
      $stacks = @stacks[$tid];
      @offcpu[$out.2, $tid, $out.1, $length, $out.3, $stacks.2, $stacks.3, $stacks.0, $stacks.1] =
        sum($ns);
    } else if ($out.8 && $ns > LONG_NS) {
      @long[$out.2, $tid, $out.1, $length, $out.6, $out.7, $out.8] = sum($ns);
    } else {
      @blocked[$out.2, $tid, $out.1, $length] = sum($ns);
    }
  }
}
END { clear(@pids); clear(@out); clear(@stacks); RUN_CLEAR }
"""
# --mode all's (RUN_*): each thread's time on the CPU, every run from its switch-in to
# its switch-out added into @ran[tgid, tid]; a thread's first run counts from the
# fork that made it (it has no switch-out before), the launched command's from its
# exec. perf's cpu-clock samples a thread only after a whole period (1 ms) on the CPU:
# 563 of futpool's 900 std::async workers (bench/fresh_waits), ~0.4 ms on the CPU
# each, had no sample, their time on the CPU missing from their total, and all mode
# read their waiting 8-11 points over their clock. Their samples are scaled to this
# (oncpu_time.py).
RUN_TIMES = {
    "RUN_AT_EXEC": "@ran_from[tid] = nsecs;",
    "RUN_AT_FORK": "@fresh[args->child_pid] = 1;",
    "RUN_ENDS": (
        "if (@ran_from[tid]) { @ran[pid, tid] = sum(nsecs - @ran_from[tid]);"
        " delete(@ran_from[tid]); }"
    ),
    "RUN_STARTS": (
        "if ($out.0) { @ran_from[args->next_pid] = nsecs; }\n"
        "  else if (@fresh[args->next_pid]) {\n"
        "    @ran_from[args->next_pid] = nsecs;\n"
        "    delete(@fresh[args->next_pid]);\n"
        "  }"
    ),
    "RUN_CLEAR": "clear(@ran_from); clear(@fresh);",
}
# --mode offcpu's: the target's threads on the CPU, ONCPU_HZ times a second, by the
# user code's address (and futex kind): the lock calls' own CPU time (see ONCPU_HZ).
# The address is the one the task entered the kernel from, in the registers at the
# top of its kernel stack (as FUTEX_KIND reads them): the leaf alone, so no stack map
# (ustack here filled the one the blocks' stacks share: "failed to look up stack id").
ONCPU_PROBE = r"""
profile:hz:ONCPU_HZ /pid == $1 || @pids[(int64)pid]/
{
  FUTEX_KIND
  @oncpu[pid, tid, $futex, $regs->ip] = count();
}
"""
# A program that times its lock calls counts their time on the CPU too (entering and
# leaving the futex wait, glibc's lock code): 1.2% of prodcons's consumers' time on an
# idle machine, which offcpu mode's blocks miss (-2 points against the program's clock).
# The timer's samples inside lock and condition-variable calls add it, each worth
# 1/ONCPU_HZ s; prime, so it keeps no phase with the kernel's tick. Only where the
# registers can be read (x86-64 with BTF); elsewhere offcpu mode times blocks alone.
ONCPU_HZ = 997
ONCPU_STATES = ("mutex", "condvar")
MAX_DEPTH = 64
# 0: not known or not in a futex wait (FUTEX_WAIT or FUTEX_WAIT_BITSET); 1: a shared
# futex's (pthread_join, process-shared objects); 2: a private one's (condition
# variables, semaphores, locks).
# The registers the task entered the kernel with sit at the top of its 16 KiB stack.
FUTEX_KIND_X86_64 = (
    "$regs = (struct pt_regs *)((uint64)curtask->stack + 16384 - sizeof(struct pt_regs));\n"
    "      $wait = $regs->orig_ax == 202 && (($regs->si & 127) == 0 || ($regs->si & 127) == 9);\n"
    "      $futex = $wait ? ($regs->si & 128 ? 2 : 1) : 0;\n"
    "      $events = $regs->orig_ax == 232 || $regs->orig_ax == 281 || $regs->orig_ax == 7;\n"
    "      $timeout = (int32)($regs->orig_ax == 7 ? $regs->dx : $regs->r10);\n"
    "      if ($events) { $futex = $timeout < 0 ? NO_TIMEOUT : NO_TIMEOUT + 1 + "
    "($timeout > MAX_TIMEOUT_MS ? MAX_TIMEOUT_MS : $timeout); }"
)
SHARED_FUTEX, PRIVATE_FUTEX = 1, 2
# The futex operation of a block, in the key's state above the scheduler's bits (the
# parser's state letter reads the low byte and PREEMPTED_BIT): FUTEX_WAIT (0) or
# FUTEX_WAIT_BITSET (9), else none.
WAIT_CLASSES = {0: 1 << 16, 9: 2 << 16}
WAIT_CLASS_X86_64 = (
    "($wait ? (($regs->si & 127) == 9 ? "
    + str(WAIT_CLASSES[9])
    + " : "
    + str(WAIT_CLASSES[0])
    + ") : 0)"
)
# In a wait for events (epoll_wait 232, epoll_pwait 281, poll 7; not the calls that
# pass their timeout by pointer), the same field holds the timeout the thread passed:
# NO_TIMEOUT for none (it blocks until an event), NO_TIMEOUT + 1 + its ms (at most
# MAX_TIMEOUT_MS). A poll loop and a blocking wait have the same stacks: this tells
# them apart (io_and_sleep_waits.py, through meta wait_timeouts).
NO_TIMEOUT, MAX_TIMEOUT_MS = 3, 100_000
# The word at the user stack pointer of a task blocked in sched_yield (24) or futex
# (202): where it entered the kernel from a leaf wrapper that keeps no frame (libc's
# sched_yield and syscall), its caller's return address, which a frame-pointer walk
# skips (and loses entirely past code without frame pointers: a Rust program's
# parking_lot and crossbeam waits were a bare sched_yield or syscall). Put back only
# below such a wrapper (LEAF_WRAPPERS), after FUTEX_KIND (its $regs). glibc's lock
# helper keeps no frame either (Debian's 2.36 calls the futex straight away): its caller
# tells pthread_mutex_lock from a condition wait retaking its mutex
# (__pthread_mutex_cond_lock), both `mutex` before (pigz's writer: 27% where its clock
# counted 0.05% in lock calls).
RETURN_ADDRESS_X86_64 = (
    "$ret = ($regs->orig_ax == 24 || $regs->orig_ax == 202) ? *(uint64 *)uptr($regs->sp) : 0;"
)
LEAF_WRAPPERS = (
    "syscall",
    "sched_yield",
    "__sched_yield",
    "__lll_lock_wait",
    "__GI___lll_lock_wait",
    "__lll_lock_wait_private",
    "__GI___lll_lock_wait_private",
)
BTF = Path("/sys/kernel/btf/vmlinux")
SAMPLE_EVERY = 8
FORCE_AFTER_NS = 2_000_000
ALWAYS_FIRST = 8
# Unsampled blocks are spread only over stacks of blocks of about the same length:
# classes 0 (under 16 us), 1 (16-256 us), 2 (to 4 ms), 3 (to 65 ms), 4 (to 1 s), 5.
LENGTH_BOUNDS_NS = tuple(16_000 * 16**k for k in range(5))
# A block longer than this whose stacks were not drawn keeps the leaf the thread
# entered the kernel from, its futex kind and return address (@long, read from the
# registers at every switch-out: no stack walk), as a one-frame stack: a pool's
# I/O thread that blocked often, then idled 3.6 s in one block not drawn, was
# "other" 99% of zstd -T4's run with no stack, where wall mode read condvar.
LONG_NS = LENGTH_BOUNDS_NS[3]
MAP_KEYS_MAX = 65536  # larger maps fail to load on some kernels, silently
ATTACH_TIMEOUT_S = 60.0
# bpftrace prints its maps when stopped, the kernel stacks symbolized: seconds on a
# loaded machine. Killed before it finished, a run had nothing to show.
PRINT_TIMEOUT_S = 120.0
# bpftrace 0.17 acts on its SIGINT or SIGTERM only when the signal interrupts its
# epoll_wait (poll_perf_events): one that comes while it handles an event (the READY
# printf, when a short command has ended by then) sets a flag nothing reads again, and it
# polls on. Caught at load 10 (1 offcpu run of `sh -c 'sleep 0.01'` in 11, 1 in 24 before):
# in epoll_wait, no signal pending, 20 s after its SIGINT; killed at PRINT_TIMEOUT_S, the
# run said "no off-CPU time was recorded". SIGTERM follows every RESEND_S until it ends:
# once printing, its SIGTERM handler only sets that flag, where a second SIGINT kills it.
RESEND_S = 1.0
# BEGIN runs once every probe is attached; bpftrace's own "Attaching" comes before.
READY = b'"READY\\n"'
TRACEFS = Path("/sys/kernel/tracing")
# Outermost functions of a complete user stack.
THREAD_ROOTS = ("clone3", "clone", "__clone", "_start", "__libc_start_main", "start_thread")
CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF = 21, 38, 39
# glibc's generic futex wait, reached from pthread_cond_wait, sem_wait and
# pthread_join alike. With its callers cut off (no frame pointers in libc), the
# futex's kind tells them apart (cut_wait_state).
CUT_CONDVAR_GUESS = ("__futex_abstimed_wait_common",)
SHARED_OBJECT = ".so"  # in a DSO's name: a shared library's
LOST_NOTED = 0.01  # of perf's samples lost, said (_say_lost)


class Unavailable(UserError):
    """eBPF off-CPU recording cannot run here; the message says why."""


def check_available() -> str:
    """Path of bpftrace, or Unavailable saying what is missing."""
    tool = shutil.which("bpftrace")
    if tool is None:
        raise Unavailable(
            "off-CPU recording needs bpftrace (apt-get install bpftrace); "
            "or add --fallback-wall to take wall-clock stack snapshots instead"
        )
    if not has_bpf_privileges():
        raise Unavailable(
            "off-CPU recording with eBPF needs root; run perfsleuth as root, "
            "or add --fallback-wall to take wall-clock stack snapshots (no root needed)"
        )
    _mount_tracefs()
    return tool


def has_bpf_privileges() -> bool:
    """CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON, in this process's effective set."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii", errors="replace")
        effective = int(
            next(ln for ln in status.splitlines() if ln.startswith("CapEff:")).split()[1], 16
        )
    except (OSError, StopIteration, ValueError, IndexError):
        return os.geteuid() == 0
    bpf_and_perfmon = (1 << CAP_BPF) | (1 << CAP_PERFMON)
    return bool(effective & (1 << CAP_SYS_ADMIN)) or effective & bpf_and_perfmon == bpf_and_perfmon


def _mount_tracefs() -> None:
    """bpftrace finds tracepoints through tracefs, which minimal systems leave unmounted."""
    if (TRACEFS / "events").is_dir():
        return
    done = subprocess.run(
        ["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise Unavailable(
            f"tracefs is not mounted and mounting it failed ({done.stderr.strip()}); "
            f"run `mount -t tracefs nodev {TRACEFS}`, or use --fallback-wall"
        )


def script_text(
    sample_every: int = SAMPLE_EVERY, oncpu_hz: int = 0, run_times: bool = False
) -> str:
    """The script; with oncpu_hz, with the on-CPU probe at that rate too; with
    run_times, timing each thread's runs too (RUN_TIMES)."""
    settings = {
        "ONCPU_HZ": oncpu_hz,
        "MAX_DEPTH": MAX_DEPTH,
        "SAMPLE_EVERY": sample_every,
        "FORCE_AFTER_NS": FORCE_AFTER_NS,
        "ALWAYS_FIRST": ALWAYS_FIRST,
        "PREEMPTED_STATE": bpftrace_stacks.PREEMPTED_BIT,
        "LENGTH_CLASS": " + ".join(f"($ns > {bound})" for bound in LENGTH_BOUNDS_NS),
        "FUTEX_KIND": FUTEX_KIND_X86_64 if _registers_readable() else "$futex = 0;",
        "WAIT_CLASS": WAIT_CLASS_X86_64 if _registers_readable() else "0",
        "NO_TIMEOUT": str(NO_TIMEOUT),
        "MAX_TIMEOUT_MS": str(MAX_TIMEOUT_MS),
        "RETURN_ADDRESS": RETURN_ADDRESS_X86_64 if _registers_readable() else "$ret = 0;",
        "LEAF_ADDRESS": "$ip = $regs->ip;" if _registers_readable() else "$ip = (uint64)0;",
        "LONG_NS": LONG_NS,
    }
    text = SCRIPT + (ONCPU_PROBE if oncpu_hz else "")
    for name, code in RUN_TIMES.items():
        text = text.replace(name, code if run_times else "")
    for name, value in settings.items():
        text = text.replace(name, str(value))
    return text


def _registers_readable() -> bool:
    """Can the script read a task's system-call registers (x86-64, the kernel's BTF)?"""
    return os.uname().machine == "x86_64" and BTF.exists()


class BpftraceSession:
    """One bpftrace process tracing the target; its JSON goes to a file."""

    def __init__(
        self, tool: str, target: Target, workdir: Path, oncpu_hz: int = 0, run_times: bool = False
    ) -> None:
        self.out = workdir / "offcpu.json"
        self.err = workdir / "offcpu.err"
        self.oncpu_hz = oncpu_hz
        script = workdir / "offcpu.bt"
        script.write_text(script_text(oncpu_hz=oncpu_hz, run_times=run_times), encoding="utf-8")
        follow_now = "0" if target.proc is not None else "1"
        self.pid = target.pid
        self.names_at_start = thread_names(target.pid)
        self.capture = bpftrace_stacks.Capture()
        self.ended_early = False
        self.cut_off = False
        env = {
            **os.environ,
            "BPFTRACE_NO_USER_SYMBOLS": "1",
            "BPFTRACE_MAP_KEYS_MAX": str(MAP_KEYS_MAX),
            "BPFTRACE_STRLEN": "32",
        }
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = spawn(
                [tool, "-f", "json", str(script), str(target.pid), follow_now],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
            )

    def wait_attached(self) -> None:
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while time.monotonic() < deadline:
            if READY in self.out.read_bytes():
                return
            if self.proc.poll() is not None:
                raise Unavailable(f"bpftrace failed to start: {self.error()}")
            time.sleep(0.05)
        stop(self.proc)
        raise Unavailable(f"bpftrace did not attach within {ATTACH_TIMEOUT_S:.0f} s")

    def finish(self) -> list[bpftrace_stacks.OffCpuRecord]:
        self.ended_early = self.proc.poll() is not None
        stopped = stop(self.proc, timeout=PRINT_TIMEOUT_S, again=signal.SIGTERM, every=RESEND_S)
        self.cut_off = stopped == -signal.SIGKILL
        self.capture = bpftrace_stacks.parse(self.out.read_text(encoding="utf-8", errors="replace"))
        names = {**self.names_at_start, **thread_names(self.pid)}
        found = list(bpftrace_stacks.records(self.capture, names))
        if self.oncpu_hz:
            period = 1e9 / self.oncpu_hz
            found += bpftrace_stacks.oncpu_records(self.capture, period, names)
        return found

    def stack_sampling(self, records: list[bpftrace_stacks.OffCpuRecord]) -> dict:
        """For the run's metadata: how stacks were sampled, the share of the blocked
        time whose own stacks were taken (the rest is spread over them), and the
        share left without a stack (no block of its length had one drawn)."""
        total = self.capture.total_ns or 1
        stackless = sum(
            r.ns for r in records if not r.kernel_stack and not r.user_stack and not r.on_cpu
        )
        return {
            "every": SAMPLE_EVERY,
            "always_after_ms": FORCE_AFTER_NS / 1e6,
            "always_first": ALWAYS_FIRST,
            "sampled_share": self.capture.sampled_ns / total,
            "without_stack_share": stackless / total,
        }

    def why_empty(self) -> str:
        """Why the session printed no blocks, for its error or note."""
        if self.ended_early:
            return f"bpftrace stopped while recording: {self.error()}"
        if self.cut_off:
            return (
                f"bpftrace did not print its maps within {PRINT_TIMEOUT_S:.0f} s of being "
                "asked to stop and was killed (a heavily loaded machine?)"
            )
        return "nothing blocked while traced"

    def error(self) -> str:
        lines = self.err.read_text(encoding="utf-8", errors="replace").splitlines()
        # bpftrace 0.17 reports its harmless RLIMIT_MEMLOCK attempt as an ERROR.
        useful = [ln for ln in lines if ln.strip() and "RLIMIT_MEMLOCK" not in ln]
        return useful[-1].strip() if useful else "no message"


def thread_names(pid: int) -> dict[int, str]:
    """tid -> name of the process's threads now; empty once it has exited."""
    names = {}
    for comm in Path(f"/proc/{pid}/task").glob("*/comm"):
        try:
            names[int(comm.parent.name)] = comm.read_text(errors="replace").rstrip("\n")
        except (OSError, ValueError):
            continue
    return names


def to_profile(
    records: Iterable[bpftrace_stacks.OffCpuRecord],
    maps: ProcessMaps,
    symbolizer: Symbolizer | None = None,
    *,
    guess_cut_waits: bool = False,
) -> Profile:
    """Off-CPU records as a profile in ns, every sample with its thread and state.

    With guess_cut_waits, a wait in glibc's generic futex helper whose callers the
    stack lost is taken for a condition-variable wait when its futex was private, or,
    when the kind is not known, when it is a worker thread's (see CUT_CONDVAR_GUESS);
    --mode all also completes such stacks from on-CPU ones. Records of samples on the
    CPU (offcpu mode's, ONCPU_HZ) are kept inside lock calls only (meta
    oncpu_lock_ns: their time)."""
    records = list(records)
    user = _user_frames(records, maps, symbolizer or Symbolizer())
    builder = ProfileBuilder(unit="ns", meta={"recorder": "bpftrace"})
    oncpu_ns = 0.0
    timeouts: dict[tuple[int, int], float] = {}
    for r in records:
        frames = [Frame(name, dso=KERNEL_DSO, kernel=True) for name in r.kernel_stack]
        frames += user[(r.tgid, r.user_stack, r.ret)]
        state = thread_state.classify(frames, "S" if r.on_cpu else r.kernel_state)
        if guess_cut_waits and state == "other" and _cut_in_futex(frames):
            state = cut_wait_state(r)
        if r.on_cpu and not _waiting_on_cpu(state, frames):
            continue  # on the CPU outside a wait: offcpu mode keeps no such time
        oncpu_ns += r.ns if r.on_cpu else 0.0
        builder.add(frames, r.ns, thread=Thread(r.tid, r.tgid, r.comm), state=state)
        if r.futex >= NO_TIMEOUT and state in ("io", "sleep"):
            key = (r.tid, r.futex - NO_TIMEOUT - 1)
            timeouts[key] = timeouts.get(key, 0.0) + r.ns
    profile = builder.build()
    if oncpu_ns:
        profile.meta["oncpu_lock_ns"] = oncpu_ns
    if timeouts:  # as wall mode's (wall.wait_timeouts)
        profile.meta["wait_timeouts"] = [[tid, ms, ns] for (tid, ms), ns in timeouts.items()]
    return profile


def _waiting_on_cpu(state: str, frames: list[Frame]) -> bool:
    """Is an on-CPU sample inside a lock or condition-variable call, or a wait for
    events (whose time on the CPU a clock around the call counts too: memcached's
    workers' epoll_wait read 4.8 points under one without it)?"""
    return state in ONCPU_STATES or (state == "io" and thread_state.in_event_wait(frames))


def cut_wait_state(record: bpftrace_stacks.OffCpuRecord) -> str:
    """The state of a wait cut short in glibc's generic futex helper: a private
    futex's is a condition variable's (or a semaphore's), a shared one's pthread_join's
    or a process-shared object's ("other"); not known, a worker thread's is taken for
    a condition variable's and the main thread's for a join."""
    if record.futex:
        return "condvar" if record.futex == PRIVATE_FUTEX else "other"
    return "condvar" if record.tid != record.tgid else "other"


def _cut_in_futex(frames: list[Frame]) -> bool:
    """A stack cut short whose last named user frame is glibc's generic futex wait."""
    cut = _cut_point(frames)
    return cut is not None and frames[cut].function.startswith(CUT_CONDVAR_GUESS)


UserKey = tuple[int, tuple[int, ...], int]  # tgid, user stack, return address


def _user_frames(
    records: list[bpftrace_stacks.OffCpuRecord], maps: ProcessMaps, symbolizer: Symbolizer
) -> dict[UserKey, list[Frame]]:
    """Symbolized user stacks; a stack ends at the first address no file maps
    (what a frame-pointer walk finds past code built without frame pointers). A
    leaf wrapper's caller (the return address read at its stack pointer) is put back
    below it (RETURN_ADDRESS_X86_64)."""
    located: dict[UserKey, tuple[list[tuple[str, int]], tuple[str, int] | None]] = {}
    for r in records:
        key = (r.tgid, r.user_stack, r.ret)
        if key in located:
            continue
        places = []
        for depth, address in enumerate(r.user_stack):
            place = _place(maps, r.tgid, address if depth == 0 else address - 1)
            if place is None:
                break
            places.append(place)
        located[key] = (places, _place(maps, r.tgid, r.ret - 1) if r.ret else None)
    wanted = {
        (path, "", off)
        for places, ret in located.values()
        for path, off in (places + [ret] if ret else places)
    }
    names = _named_by_start(symbolizer.symbolize_offsets(sorted(wanted)), symbolizer)
    return {key: _frames(places, ret, names) for key, (places, ret) in located.items()}


Places = dict[tuple[str, int], tuple[Frame, ...]]


def _named_by_start(names: Places, symbolizer: Symbolizer) -> Places:
    """The frames without a name named by their function's start, "[unknown] DSO+0xSTART",
    as wall mode's and perf's are (function_starts.unnamed_frame): pbzip2's compressors,
    preempted in Debian's stripped libbz2, were "[unknown]" off the CPU and "[unknown]
    libbz2.so.1.0.4+0x3080" on it in all mode. Such a frame is still no name to complete
    a cut stack by (_cut_point, is_unknown)."""
    out = {}
    for (path, offset), frames in names.items():
        if is_unknown(frames[-1]):
            real = symbolizer.resolved.get(path)
            info = elf_info(real) if real else None
            vaddr = info.offset_to_vaddr(offset) if info else None
            frames = (*frames[:-1], unnamed_frame(real, dso_name(path), vaddr, ""))
        out[(path, offset)] = frames
    return out


def _place(maps: ProcessMaps, tgid: int, pc: int) -> tuple[str, int] | None:
    m = maps.lookup(tgid, pc)
    return None if m is None else (m.path, pc - m.start + m.offset)


def _frames(
    places: list[tuple[str, int]],
    ret: tuple[str, int] | None,
    names: dict[tuple[str, int], tuple[Frame, ...]],
) -> list[Frame]:
    """The stack's frames, with the caller of a leaf wrapper put back after it."""
    if ret and places and places[1:2] != [ret]:
        leaf = names[places[0]]
        if leaf and leaf[-1].function in LEAF_WRAPPERS:
            places = [places[0], ret, *places[1:]]
    return [f for place in places for f in names[place]]


def _bpftrace(options: RecordOptions) -> tuple[str | None, str]:
    """(bpftrace's path, ""), or (None, why) when it cannot run and --fallback-wall
    was given."""
    try:
        return check_available(), ""
    except Unavailable as e:
        if options.fallback_wall:
            return None, str(e)
        raise


def record_offcpu(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """Recorder for --mode offcpu (see commands/record.py)."""
    if shutil.which("bpftrace") is None and has_bpf_privileges() and shutil.which("perf"):
        return record_offcpu_with_perf(options, cmd, workdir)
    tool, why_not = _bpftrace(options)
    if tool is None:
        return wall.record_wall_instead(options, cmd, workdir, reason=why_not)
    oncpu_hz = ONCPU_HZ if _registers_readable() else 0
    target, maps, session = _traced(tool, options, cmd, workdir, oncpu_hz=oncpu_hz)
    started = time.monotonic()
    target.release()
    target.wait(_duration(options), tick=maps.tick, interval=0.005)
    elapsed = time.monotonic() - started
    records = session.finish()
    if not records:
        raise UserError(
            f"no off-CPU time was recorded for process {target.pid} ({session.why_empty()}): "
            "it never left the CPU, or record it again"
        )
    profile = to_profile(records, maps, guess_cut_waits=True)
    profile.dsos = maps.dsos()
    meta = {"recorder": "bpftrace", "pid": target.pid, "oncpu_lock_hz": oncpu_hz}
    meta["offcpu_stack_sampling"] = session.stack_sampling(records)
    return Recording(profile, exit_status=target.exit_status, duration_s=elapsed, meta=meta)


def record_offcpu_with_perf(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """The fallback without bpftrace: perf records every switch-out of the target's
    threads with a DWARF stack, and its switch-ins; heavier than eBPF (a stack copy
    per switch, unwound afterwards by perf script), so only used without bpftrace."""
    _mount_tracefs()
    print("perfsleuth: bpftrace not found; recording off-CPU time with perf", file=sys.stderr)
    target = Target.of(cmd, options.pid)
    data = workdir / "sched.data"
    argv = [perf.perf_binary(), "record", "-q", *perf.NO_BPF_EVENTS, "-o", str(data)]
    argv += ["-e", "sched:sched_switch"]
    argv += ["--switch-events", "--call-graph", "dwarf", "-p", str(target.pid)]
    try:
        recorder = perf.attach(argv, target.pid, workdir)
    except UserError:
        target.abort()
        raise
    started = time.monotonic()
    target.release()
    target.wait(_duration(options), interval=0.005)
    elapsed = time.monotonic() - started
    stop(recorder)
    return Recording(
        _switches_profile(data, target.pid),
        exit_status=target.exit_status,
        duration_s=elapsed,
        meta={"recorder": "perf-sched", "pid": target.pid},
    )


def _switches_profile(data: Path, pid: int) -> Profile:
    fields = "comm,tid,pid,time,event,trace,ip,sym,dso"
    argv = [perf.perf_binary(), "script", "-i", str(data), "-F", fields, "--show-switch-events"]
    builder = ProfileBuilder(unit="ns", meta={"recorder": "perf-sched"})
    with spawn(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace"
    ) as script:
        assert script.stdout is not None
        for switch in perf_switches.parse(script.stdout):
            frames = list(switch.frames)
            state = thread_state.classify(frames, switch.kernel_state)
            thread = Thread(switch.tid, switch.pid, switch.comm)
            builder.add(frames, switch.ns, thread=thread, state=state)
    profile = builder.build()
    if not profile.sample_weight:
        raise UserError(
            f"no off-CPU time was recorded for process {pid}: it ended before "
            "tracing started, or never left the CPU"
        )
    return profile


def record_all(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """Recorder for --mode all: perf on-CPU samples + eBPF off-CPU time, both in ns."""
    tool, why_not = _bpftrace(options)
    if tool is None:
        return wall.record_wall_instead(options, cmd, workdir, reason=why_not)
    target, maps, session = _traced(tool, options, cmd, workdir, run_times=True)
    # DWARF by default: frame-pointer stacks lose the caller of every libc function,
    # and the on-CPU stacks name the threads' functions for the off-CPU ones.
    mode = "dwarf" if options.call_graph == "auto" else options.call_graph
    rate = options.freq or perf.DEFAULT_FREQ[mode]
    data = workdir / "perf.data"
    try:
        perf_proc = perf.start_attached(target.pid, data, rate, mode)
    except UserError:
        target.abort()
        stop(session.proc)
        raise
    started = time.monotonic()
    target.release()
    target.wait(_duration(options), tick=maps.tick, interval=0.005)
    elapsed = time.monotonic() - started
    stop(perf_proc)
    records = session.finish()
    meta = {"recorder": "perf+bpftrace", "pid": target.pid, "freq": rate, "call_graph": mode}
    meta["offcpu_stack_sampling"] = session.stack_sampling(records)
    profile = _all_profile(records, maps, session, (data, rate), meta)
    return Recording(profile, exit_status=target.exit_status, duration_s=elapsed, meta=meta)


def _all_profile(
    records: list,
    maps: ProcessMaps,
    session: BpftraceSession,
    perf_run: tuple[Path, int],
    meta: dict,
) -> Profile:
    """The merged on- and off-CPU profile (perf_run: perf.data and its rate); what
    is missing goes to meta. A wait cut in glibc's futex helper is labelled by its
    futex first, as in offcpu mode: the on-CPU stacks seldom hold the main thread's
    way into it (zstd -T4's main thread read 73-82% "other" where wall mode reads
    condvar), and the completion only adds frames then."""
    offcpu = to_profile(records, maps, guess_cut_waits=True)
    offcpu.dsos = maps.dsos()
    try:
        oncpu = _oncpu_profile(*perf_run)
    except UserError as e:
        if not records:  # not perf's words: they name its perf.data, a deleted temporary
            raise UserError(
                f"nothing was recorded for process {meta['pid']}: it neither ran on a CPU "
                "nor blocked anew while recorded; record it longer, or launch it "
                "(perfsleuth record -- CMD)"
            ) from e
        # e.g. a process attached with --pid that slept through the whole window;
        # what eBPF recorded is still worth keeping.
        print(f"perfsleuth: no on-CPU samples ({e}); storing off-CPU time only", file=sys.stderr)
        meta["oncpu_missing"] = str(e)
        return offcpu
    if not records:
        why = session.why_empty()
        print(f"perfsleuth: no off-CPU time was recorded ({why})", file=sys.stderr)
        meta["offcpu_missing"] = why
    _say_lost(oncpu, meta)
    merged = _merged(oncpu, offcpu, session.capture.ran, session.capture.names)
    known = {d["path"] for d in oncpu.dsos}
    merged.dsos = oncpu.dsos + [d for d in offcpu.dsos if d["path"] not in known]
    return merged


def _say_lost(oncpu: Profile, meta: dict) -> None:
    """perf's lost samples into meta (oncpu_samples_lost), and said when they are more
    than LOST_NOTED of its samples: each thread's time on the CPU stays whole (the
    scheduler's, oncpu_time), but the samples kept are no fair draw of it (perf drains
    its buffer when it gets a CPU, after the threads' blocks: perf.BUFFER_BYTES)."""
    lost = int(oncpu.meta.get("lost_samples") or 0)
    meta["oncpu_samples_lost"] = lost
    total = lost + int(oncpu.meta.get("num_samples") or 0)
    if total and lost > LOST_NOTED * total:
        print(
            f"perfsleuth: perf lost {lost} of its {total} on-CPU samples (its buffer "
            "was full): the split of the threads' time on the CPU over their stacks "
            "may lean toward what they ran after blocking",
            file=sys.stderr,
        )


def _traced(
    tool: str,
    options: RecordOptions,
    cmd: list[str],
    workdir: Path,
    oncpu_hz: int = 0,
    run_times: bool = False,
) -> tuple[Target, ProcessMaps, BpftraceSession]:
    """The target (started held, or attached with --pid), its maps and bpftrace on it
    (with the on-CPU probe at oncpu_hz, if not 0; timing the threads' runs with
    run_times)."""
    target = Target.of(cmd, options.pid)
    maps = ProcessMaps(target.pid)
    session = BpftraceSession(tool, target, workdir, oncpu_hz, run_times)
    try:
        session.wait_attached()
    except UserError:
        target.abort()
        raise
    return target, maps, session


def _duration(options: RecordOptions) -> float | None:
    if options.pid is None:
        return None
    return options.duration or 10.0


def _oncpu_profile(data: Path, rate: int) -> Profile:
    if not data.exists() or data.stat().st_size == 0:
        raise UserError("perf recorded nothing; check `perf record -p PID` works here")
    profile = perf_data.read(data)
    return profile if profile.unit == "ns" else _in_ns(profile, 1e9 / rate)


def _in_ns(profile: Profile, ns_per_unit: float) -> Profile:
    profile.sample_weight = [w * ns_per_unit for w in profile.sample_weight]
    profile.unit = "ns"
    return profile


def _threads_by_tid(*profiles: Profile) -> dict[int, Thread]:
    """One Thread per tid, named by the first profile that saw a name (bpftrace
    names threads after exec; perf -p may still call the main thread `sh`)."""
    out: dict[int, Thread] = {}
    for profile in profiles:
        for thread in profile.threads:
            known = out.get(thread.tid)
            if known is None or (not known.name and thread.name):
                out[thread.tid] = thread
    return out


def _merged(
    oncpu: Profile,
    offcpu: Profile,
    ran: oncpu_time.Ran | None = None,
    names: dict[int, str] | None = None,
) -> Profile:
    """One ns profile: on-CPU rows labelled by their stack (running, or inside a
    lock or wait call), each thread's scaled to its time on the CPU where ran has it
    (oncpu_time), off-CPU rows with their stacks completed where possible. names:
    the threads' names bpftrace saw (a thread that neither blocked nor was sampled is
    in neither profile)."""
    builder = ProfileBuilder(unit="ns", meta={"recorder": "perf+bpftrace"})
    threads = _threads_by_tid(offcpu, oncpu)
    for tgid, tid in ran or {}:
        threads.setdefault(tid, Thread(tid, tgid, (names or {}).get(tid, "")))
    completions = Completions(oncpu)
    sampled = oncpu_time.sampled_ns(oncpu)
    scale = oncpu_time.scales(sampled, ran or {})
    for stack, weight, count, t, _state in oncpu.rows():
        frames = [oncpu.frames[f] for f in stack]
        thread = threads[oncpu.threads[t].tid] if t >= 0 else None
        weight *= scale.get(thread.tid, 1.0) if thread else 1.0
        builder.add(
            frames, weight, count=count, thread=thread, state=thread_state.classify(frames, "R")
        )
    completed_ns = 0.0
    waits = WaitKinds(completions, threads)
    for stack, weight, count, t, state in offcpu.rows():
        frames = [offcpu.frames[f] for f in stack]
        tid = offcpu.threads[t].tid if t >= 0 else -1
        waits.add(tid, frames, weight)
        stacks = _joins_kept(completions.complete(tid, frames), frames, state)
        completed_ns += weight if stacks[0][0] is not frames else 0.0
        for completed, share in stacks:
            known = _completed_state(completed, state)
            builder.add(
                completed, weight * share, count=count, thread=threads.get(tid), state=known
            )
    builder.profile.meta["offcpu_completed_from_oncpu"] = completed_ns / (offcpu.total or 1.0)
    if "wait_timeouts" in offcpu.meta:
        builder.profile.meta["wait_timeouts"] = offcpu.meta["wait_timeouts"]
    for frames, ns, thread in oncpu_time.unsampled(sampled, ran or {}, threads, waits.stacks_of):
        builder.add(frames, ns, count=0, thread=thread, state=thread_state.classify(frames, "R"))
    return builder.build()


def _joins_kept(
    stacks: list[tuple[list[Frame], float]], cut: list[Frame], state: str
) -> list[tuple[list[Frame], float]]:
    """The completions of a wait cut in glibc's futex helper that its futex said is no
    condition wait (`other`: a shared futex, pthread_join's) that are no condition wait
    either, their shares made whole; none: the cut stack. The on-CPU stacks through the
    helper are nearly all condition waits (perf seldom samples a join on the CPU):
    pbzip2's main thread, joining its threads at the end, read condvar +2.0 to +4.6
    points over its clock."""
    if state != "other" or not _cut_in_futex(cut):
        return stacks
    kept = [(s, share) for s, share in stacks if thread_state.classify(s, "S") == state]
    total = sum(share for _s, share in kept)
    return [(s, share / total) for s, share in kept] if kept else [(cut, 1.0)]


# States a cut stack's wait is given that its completed stack may tell better.
RELABELLED = ("other", "sleep")


def _completed_state(completed: list[Frame], state: str) -> str:
    """The state of a completed off-CPU stack cut with this one: blocked somewhere the
    cut stack could not tell ("other"), or a yield that the whole stack may show inside
    a lock's or a channel's spinning, is what the whole stack says; a wait in glibc's
    futex helper taken for a condition variable's by its private futex is a
    reader-writer lock's when the whole stack shows one (pthread_rwlock_*lock waits
    there too); a lock wait cut in glibc's lock helper is the condition wait's own
    relock when the whole stack shows one (pigz's writer, woken by a broadcast under
    the lock: 27-33% `mutex` where its clock counted 0.05% in lock calls). Other
    guesses stand: the on-CPU stacks seldom hold a main thread's way into a condition
    wait (zstd -T4's, see _all_profile)."""
    named = thread_state.classify(completed, "S")
    own_lock = state == "mutex" and named == thread_state.OWN_LOCK_OF
    return named if state in RELABELLED or named == "mutex" or own_lock else state


class Completions:
    """Completes off-CPU stacks that a frame-pointer walk cut short (libc and
    libstdc++ have no frame pointers, so the program frame that called into
    them is lost) from complete on-CPU DWARF stacks through the same function:
    entering a futex wait runs on the CPU, so perf samples it with the full
    chain. The same thread's stacks are used, else those of threads of the same
    kind (the same outermost function: the other consumers of a pool, never
    main's join for a worker's wait). When several call paths reach that
    function, the off-CPU time is split in proportion to their on-CPU samples."""

    def __init__(self, oncpu: Profile) -> None:
        # (tid or thread kind, function) -> {outer frames after it: sample count}
        self._outer: dict[tuple[int | str, str], dict[tuple[Frame, ...], int]] = {}
        kinds: dict[int, dict[str, int]] = {}
        for stack, _weight, count, t, _state in oncpu.rows():
            frames = [oncpu.frames[f] for f in stack]
            if t < 0 or not frames or frames[-1].function not in THREAD_ROOTS:
                continue
            tid = oncpu.threads[t].tid
            kind = _thread_kind(frames)
            votes = kinds.setdefault(tid, {})
            votes[kind] = votes.get(kind, 0) + count
            for depth, frame in enumerate(frames):
                if not frame.kernel and not is_unknown(frame):
                    outer = tuple(frames[depth + 1 :])
                    for key in ((tid, frame.function), (kind, frame.function)):
                        by_outer = self._outer.setdefault(key, {})
                        by_outer[outer] = by_outer.get(outer, 0) + count
        self._kind = {tid: max(v, key=v.__getitem__) for tid, v in kinds.items()}
        self._by_kind: dict[str, oncpu_time.Stacks] = {}
        for stack, weight, _count, t, _state in oncpu.rows():
            kind = self._kind.get(oncpu.threads[t].tid, "") if t >= 0 else ""
            if kind:
                whole = tuple(oncpu.frames[f] for f in stack)
                by_stack = self._by_kind.setdefault(kind, {})
                by_stack[whole] = by_stack.get(whole, 0.0) + weight

    def kinds(self) -> dict[int, str]:
        """tid: what the thread runs, for every thread with a whole on-CPU stack."""
        return dict(self._kind)

    def kind(self, tid: int) -> str:
        """What the thread runs, by its on-CPU stacks; "" when it has none."""
        return self._kind.get(tid, "")

    def stacks_of(self, kind: str) -> oncpu_time.Stacks:
        """The on-CPU stacks (sampled ns) of the threads of that kind."""
        return self._by_kind.get(kind, {})

    def complete(self, tid: int, frames: list[Frame]) -> list[tuple[list[Frame], float]]:
        """[(stack, share of the weight)]: the stack itself when it is whole or
        nothing on the CPU matches it."""
        cut = _cut_point(frames)
        if cut is None:
            return [(frames, 1.0)]
        function = frames[cut].function
        options = self._outer.get((tid, function))
        if not options and tid in self._kind:
            options = self._outer.get((self._kind[tid], function))
        if not options:
            return [(frames, 1.0)]
        total = sum(options.values())
        head = frames[: cut + 1]
        return [(head + list(outer), n / total) for outer, n in options.items()]


class WaitKinds:
    """The kinds of thread (Completions) that wait at each place, by the off-CPU stacks
    of threads whose kind is known: a thread perf never sampled is known only by where
    it waits (its longest wait with a stack), and gets the on-CPU stacks of the kind
    waiting there; one with no such wait (it never blocked), those of the kind of the
    threads of its name (a process's main thread left out: workers are often named
    after their process). A main thread takes only main threads' stacks and a started
    thread only started threads': wrapped_locks's main thread, asleep in nanosleep as
    its workers are between their critical sections, was given a worker's lock stacks
    for its few ms on the CPU and listed as a waiter of that worker's lock."""

    def __init__(self, completions: Completions, threads: dict[int, Thread]) -> None:
        self._completions = completions
        self._threads = threads
        self._votes: dict[str, dict[str, float]] = {}  # place or name: {kind: ns}
        self._longest: dict[int, tuple[float, str]] = {}  # tid: (ns, place)
        for tid, kind in completions.kinds().items():
            thread = threads.get(tid)
            if thread is not None and thread.tid != thread.pid:
                self._vote(_NAMED + thread.name, kind, 1.0)

    def _vote(self, key: str, kind: str, ns: float) -> None:
        votes = self._votes.setdefault(key, {})
        votes[kind] = votes.get(kind, 0.0) + ns

    def add(self, tid: int, frames: list[Frame], ns: float) -> None:
        place = _wait_place(frames)
        if not place:
            return
        place = self._role(tid) + place
        kind = self._completions.kind(tid)
        if kind:
            self._vote(place, kind, ns)
        if ns > self._longest.get(tid, (0.0, ""))[0]:
            self._longest[tid] = (ns, place)

    def stacks_of(self, tid: int) -> oncpu_time.Stacks:
        """The on-CPU stacks of the kind that waits where the thread waited longest,
        else of its name's."""
        place = self._longest.get(tid, (0.0, ""))[1]
        thread = self._threads.get(tid)
        name = _NAMED + thread.name if thread is not None and thread.tid != thread.pid else ""
        votes = self._votes.get(place) or self._votes.get(name)
        if not votes:
            return {}
        return self._completions.stacks_of(max(votes, key=votes.__getitem__))

    def _role(self, tid: int) -> str:
        thread = self._threads.get(tid)
        return _MAIN if thread is not None and thread.tid == thread.pid else _STARTED


# WaitKinds keys apart from any function's
_NAMED, _MAIN, _STARTED = "thread name: ", "main thread at: ", "started thread at: "


def _wait_place(frames: list[Frame]) -> str:
    """Where a wait is: its outermost named user frame, the thread's own function for
    a whole stack (a cut one's callers are lost)."""
    cut = _cut_point(frames)
    return _thread_kind(frames) if cut is None else frames[cut].function


def _thread_kind(frames: list[Frame]) -> str:
    """The outermost named function below the thread's root: what the thread runs; in a
    stripped program, its own outermost function, named by its start, comes before a
    library's named one further in. A stripped library's function named by its start is
    no kind: libstdc++'s thread routine runs under every std::thread (prodcons's
    consumers were given its producer's stacks). Without that, Debian's pzstd's
    std::threads (all its frames named by their starts) had no kind, or `fread`."""
    own = ""
    for frame in reversed(frames):
        if frame.function in THREAD_ROOTS or frame.function == UNKNOWN:
            continue
        in_library = frame.kernel or SHARED_OBJECT in frame.dso
        if not is_unknown(frame) and not (own and in_library):
            return frame.function
        if not own and is_unknown(frame) and not in_library:
            own = frame.function
    return own


def _cut_point(frames: list[Frame]) -> int | None:
    """Index of the outermost named user frame of a stack that does not reach a
    thread's root (its callers are missing); None for a complete stack."""
    user = [i for i, f in enumerate(frames) if not f.kernel]
    if not user or frames[user[-1]].function in THREAD_ROOTS:
        return None
    named = [i for i in user if not is_unknown(frames[i])]
    return named[-1] if named else None
