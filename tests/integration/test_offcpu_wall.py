"""Off-CPU (bpftrace), wall-clock (eu-stack) and --mode all on the prodcons example.

The truth is the example's own measurement (prodcons-measured times every wait
for the queue's mutex and condition variable and prints the total on stderr).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration

VENV_BIN = Path(sys.executable).parent
TRUTH = re.compile(r"consumers waited (\d+) ns of (\d+) ns")
MESSAGES = "60000"
# glibc's internal locks (malloc arenas, stdio) are real waiting, but not the
# queue's: the program's own timing does not cover them.
GLIBC_INTERNAL_LOCK = "lll_lock_wait_private"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="eBPF needs root")


def perfsleuth(
    *args: str, cwd: Path, prefix: list[str] | None = None
) -> subprocess.CompletedProcess:
    argv = [*(prefix or []), str(VENV_BIN / "perfsleuth"), *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)


def unprivileged_prefix() -> list[str]:
    """How to run perfsleuth without privileges: as user nobody when nobody can
    run this interpreter, else as root stripped of every capability (noroot
    securebits), which is what eBPF and ptrace permissions look at."""
    nobody = ["runuser", "-u", "nobody", "--"]
    probe = subprocess.run(
        [*nobody, sys.executable, "-c", "import perfsleuth"], capture_output=True
    )
    if probe.returncode == 0:
        return nobody
    return [
        "setpriv",
        "--securebits=+noroot,+noroot_locked",
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--",
    ]


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    # Attached recordings first say that they began (Target.wait): not an error.
    lines = [
        ln
        for ln in proc.stderr.splitlines()
        if ln.startswith("perfsleuth:") and not ln.startswith("perfsleuth: recording process")
    ]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def all_mode_run(examples_built: Path, tmp_path_factory: pytest.TempPathFactory):
    if os.geteuid() != 0:
        pytest.skip("eBPF needs root")
    cwd = tmp_path_factory.mktemp("all")
    proc = perfsleuth(
        "record",
        "--mode",
        "all",
        "--",
        str(examples_built / "prodcons-measured"),
        MESSAGES,
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    truth = TRUTH.search(proc.stderr)
    assert truth, proc.stderr
    return cwd, int(truth[1]) / int(truth[2])


def consumers_waiting(cwd: Path, lived_ns: float | None = None) -> float:
    """The consumers' lock and condition-variable time over all their time, or over
    lived_ns (the program's own count of it) for a run without on-CPU time."""
    store = Store(cwd / ".perfsleuth")
    profile = store.load(store.resolve("latest"))
    main_tid = next(t.tid for t in profile.threads if t.tid == t.pid)
    waited = total = 0.0
    for stack, weight, _count, t, state in profile.rows():
        if t < 0 or profile.threads[t].tid == main_tid:
            continue
        total += weight
        names = {profile.frames[f].function for f in stack}
        if state in ("mutex", "condvar") and not any(GLIBC_INTERNAL_LOCK in n for n in names):
            waited += weight
    return waited / (lived_ns or total)


@needs_root
def test_all_mode_sees_the_consumers_waiting_as_the_program_measures_it(all_mode_run):
    cwd, truth = all_mode_run
    measured = consumers_waiting(cwd)
    assert truth > 0.02, "the example should make its consumers wait"
    # The program's own clock also counts the run-queue delay after a waiter is woken
    # while the machine is busy, which the kernel's states cannot all attribute to the
    # wait: on a loaded 2-core CI machine the profile read 1.9-5.3 points below it
    # (5.3 once in three clean-clone runs), never above.
    assert truth - 0.075 < measured < truth + 0.03, (measured, truth)


@needs_root
def test_all_mode_threads_have_names_states_and_wall_time(all_mode_run):
    cwd, _truth = all_mode_run
    doc = json.loads(perfsleuth("threads", "--format", "json", cwd=cwd).stdout)
    assert doc["unit"] == "ns"
    assert len(doc["threads"]) == 4  # main (producer) + 3 consumers
    assert all(t["name"].startswith("prodcons") for t in doc["threads"])
    consumers = [t for t in doc["threads"] if t["tid"] != t["pid"]]
    assert all("running" in t["states"] and "mutex" in t["states"] for t in consumers)
    assert all(abs(sum(t["states"].values()) - 1) < 1e-6 for t in doc["threads"])


@needs_root
def test_lock_contention_gain_is_the_critical_path(all_mode_run):
    """The consumers' wait is found at their line; its gain is the wall time the program
    would save, never more than the waiters' summed time: three consumers on this
    2-core machine keep the CPUs busy while one waits (a lock-free queue measured
    1.008x), so here it is near 0, where the summed waits promised ~20%."""
    cwd, truth = all_mode_run
    proc = perfsleuth("advise", "--all", "--format", "json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    locks = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "lock.contention"]
    # some stacks may stop in libc: those waits are a site of the thread's function, line 0
    located = [
        f
        for f in locks
        if "consumer" in f["function"] and f["file"].endswith("prodcons.cc") and f["line"] > 0
    ]
    assert located, [f["title"] for f in locks]
    top = max(located, key=lambda f: f["details"]["waiters_fraction"])
    assert "moodycamel" in top["suggestion"]
    assert 0 < top["details"]["waiters_fraction"] < truth + 0.15
    assert 0 <= top["estimated_gain"] <= top["details"]["waiters_fraction"]
    assert any(e.startswith("critical path:") for e in top["evidence"])
    # which code holds the lock this mode does not see: process_message, which the
    # consumers run outside it, is listed but not called the code under the lock
    assert top["details"]["holders_under_the_lock"] is False
    assert any("which code runs under the lock this run cannot tell" in e for e in top["evidence"])
    if (os.cpu_count() or 1) <= 2:  # 3 consumers busy on 2 CPUs: the waits cost no wall time
        assert top["estimated_gain"] < top["details"]["waiters_fraction"] / 2


@needs_root
def test_views_filter_by_state_and_thread(all_mode_run):
    cwd, _truth = all_mode_run
    every = json.loads(perfsleuth("top", "--format", "json", cwd=cwd).stdout)
    waits = perfsleuth("top", "--state", "mutex", "--total", "-n", "0", "--format", "json", cwd=cwd)
    waits = json.loads(waits.stdout)
    assert 0 < waits["total"] < every["total"]
    assert any("lll_lock_wait" in r["function"] for r in waits["rows"])
    assert not any("process_message" in r["function"] for r in waits["rows"][:3])
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=cwd).stdout)["threads"]
    tid = str(threads[0]["tid"])
    one = json.loads(perfsleuth("top", "--thread", tid, "--format", "json", cwd=cwd).stdout)
    assert abs(one["total"] - threads[0]["total"]) < 1e-3 * threads[0]["total"]
    folded = perfsleuth("flame", "--folded", "--state", "mutex", cwd=cwd).stdout
    assert folded.strip() and "process_message" not in folded.splitlines()[0]


@needs_root
def test_offcpu_mode_records_blocked_time_in_ns(examples_built: Path, tmp_path: Path):
    proc = perfsleuth(
        "record", "--mode", "offcpu", "--", str(examples_built / "prodcons"), "20000", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)
    assert doc["unit"] == "ns" and doc["total"] > 0
    states = {s for t in doc["threads"] for s in t["states"]}
    assert "mutex" in states


@needs_root
def test_offcpu_mode_times_the_consumers_waiting_as_the_program_does(
    examples_built: Path, tmp_path: Path
):
    program = str(examples_built / "prodcons-measured")
    proc = perfsleuth("record", "--mode", "offcpu", "--", program, MESSAGES, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    truth = TRUTH.search(proc.stderr)
    assert truth, proc.stderr
    waited, lived = int(truth[1]), int(truth[2])
    measured = consumers_waiting(tmp_path, lived_ns=lived)
    # the same bounds as --mode all's (run-queue delay after a wake-up on a loaded machine)
    assert waited / lived - 0.075 < measured < waited / lived + 0.03, (measured, waited / lived)


@pytest.fixture
def program_for_nobody(examples_built: Path, tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """prodcons and a store directory that user nobody can use."""
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root to switch to user nobody")
    work = tmp_path / "nobody"
    work.mkdir()
    work.chmod(0o777)
    tmp_path.chmod(0o755)
    binary = work / "prodcons"
    shutil.copy(examples_built / "prodcons", binary)
    binary.chmod(0o755)
    return work, binary, unprivileged_prefix()


def test_wall_mode_works_without_root(program_for_nobody):
    work, binary, prefix = program_for_nobody
    # 20 snapshots a second: at the default 10 a loaded run of about a second has a few
    # dozen, and a clean-clone run once lost the consumers' work off a top 5.
    record = ["record", "--mode", "wall", "--freq", "20", "--", str(binary), "40000"]
    proc = perfsleuth(*record, cwd=work, prefix=prefix)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(perfsleuth("threads", "--format", "json", cwd=work, prefix=prefix).stdout)
    assert len(doc["threads"]) >= 4
    top = json.loads(perfsleuth("top", "--format", "json", cwd=work, prefix=prefix).stdout)
    rows = [(r["function"], r["self"], r["total"]) for r in top["rows"][:10]]
    assert any("process_message" in r[0] for r in rows), (rows, top["samples"], proc.stderr)


def test_offcpu_without_root_explains_and_falls_back_when_asked(program_for_nobody):
    work, binary, prefix = program_for_nobody
    refused = perfsleuth(
        "record", "--mode", "offcpu", "--", str(binary), "20000", cwd=work, prefix=prefix
    )
    line = one_error_line(refused)
    assert "root" in line and "--fallback-wall" in line
    assert not (work / ".perfsleuth").exists()
    fallback = perfsleuth(
        "record",
        "--mode",
        "offcpu",
        "--fallback-wall",
        "--",
        str(binary),
        "40000",
        cwd=work,
        prefix=prefix,
    )
    assert fallback.returncode == 0, fallback.stderr
    runs = json.loads(perfsleuth("runs", "--format", "json", cwd=work, prefix=prefix).stdout)
    assert runs[0]["mode"] == "wall"


@pytest.mark.parametrize("mode", ["wall", "offcpu"])
def test_dead_pid_is_a_clear_error(mode: str, tmp_path: Path):
    if mode == "offcpu" and os.geteuid() != 0:
        pytest.skip("eBPF needs root")
    dead = subprocess.Popen(["true"])
    dead.wait()
    proc = perfsleuth(
        "record", "--mode", mode, "--pid", str(dead.pid), "--duration", "1", cwd=tmp_path
    )
    assert f"no process with PID {dead.pid}" in one_error_line(proc)
    assert not (tmp_path / ".perfsleuth").exists()


@pytest.mark.parametrize("mode", ["wall", "offcpu"])
def test_process_exiting_mid_recording_keeps_what_was_recorded(
    mode: str, examples_built: Path, tmp_path: Path
):
    if mode == "offcpu" and os.geteuid() != 0:
        pytest.skip("eBPF needs root")
    # A target that outlives any attach time, ended once the recording has begun:
    # a fixed-length one raced bpftrace's start-up and sometimes died first.
    target = subprocess.Popen(
        [str(examples_built / "prodcons"), "100000000"], stdout=subprocess.DEVNULL
    )
    recorder = subprocess.Popen(
        [str(VENV_BIN / "perfsleuth"), "record", "--mode", mode, "--pid", str(target.pid)]
        + ["--duration", "120"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = recorder.stderr.readline()
        time.sleep(0.5)
    finally:
        target.terminate()
        target.wait()
    rest = recorder.communicate(timeout=60)[1]
    assert first.startswith(f"perfsleuth: recording process {target.pid} for 120 s"), first + rest
    assert recorder.returncode == 0, rest
    assert f"process {target.pid} exited after" in rest and "of the 120 s" in rest
    doc = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)
    assert doc["total"] > 0 and doc["threads"]


def test_wall_mode_finds_the_io_waits_and_the_sleep_poll_loop(examples_built: Path, tmp_path: Path):
    proc = perfsleuth(
        "record",
        "--mode",
        "wall",
        "--freq",
        "20",
        "--",
        str(examples_built / "pollsync"),
        "3",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    advice = perfsleuth("advise", "--format", "json", cwd=tmp_path)
    found = {(f["rule"], f["function"]) for f in json.loads(advice.stdout)["findings"]}
    # the writer waits in fsync: the cost class's finding, with the fix for its cause
    assert ("class.syscall.fsync", "writer") in found, found
    assert ("offcpu.sleep-poll", "poller") in found, found


def sleep_poll_sites(mode: str, program: list[str], tmp_path: Path) -> set[str]:
    proc = perfsleuth("record", "--mode", mode, "--", *program, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(perfsleuth("advise", "--format", "json", cwd=tmp_path).stdout)
    return {f["function"] for f in advice["findings"] if f["rule"] == "offcpu.sleep-poll"}


@pytest.mark.parametrize("mode", ["wall", "offcpu", "all"])
def test_a_blocking_wait_for_events_is_no_poll_loop(mode: str, examples_built: Path, tmp_path):
    """eventwait's consumer blocks in epoll_wait with no timeout (-1), as
    bench/fresh_waits/pipewait's readers do: the finding told it to replace its
    sleep/poll loop with a blocking wait, which it already was. The timeout it passed
    (wallsnap's registers, bpftrace's at the switch-out) tells it from a poll loop."""
    if mode != "wall" and os.geteuid() != 0:
        pytest.skip("eBPF needs root")
    program = [str(examples_built / "eventwait"), "block", "2"]
    assert sleep_poll_sites(mode, program, tmp_path) == set()


def test_a_poll_loop_with_a_short_timeout_is_still_found(examples_built: Path, tmp_path):
    """eventwait's consumer polls with a 1 ms timeout, checking a counter."""
    program = [str(examples_built / "eventwait"), "poll", "2"]
    assert sleep_poll_sites("wall", program, tmp_path) == {"wait_polling"}


@pytest.mark.parametrize("mode", ["wall", "all"])
def test_locks_taken_through_a_wrapper_are_named_by_their_call_sites(
    mode: str, examples_built: Path, tmp_path: Path
):
    """wrapped_locks takes two locks through one wrapper, as pigz does through yarn.c's
    possess_(): two findings, each named by the program's call (before: one finding,
    possess_, for both locks)."""
    if mode == "all" and os.geteuid() != 0:
        pytest.skip("eBPF needs root")
    program = str(examples_built / "wrapped_locks")
    proc = perfsleuth("record", "--mode", mode, "--", program, "3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    advice = perfsleuth("advise", "--format", "json", cwd=tmp_path)
    findings = json.loads(advice.stdout)["findings"]
    locks = {
        (f["function"], f["file"].rsplit("/", 1)[-1])
        for f in findings
        if f["rule"] == "lock.contention"
    }
    assert locks == {("tally", "wrapped_locks.c"), ("journal", "wrapped_locks.c")}, locks


@needs_root
def test_offcpu_mode_finds_idle_workers_without_frame_pointers(
    examples_built: Path, tmp_path: Path
):
    proc = perfsleuth(
        "record", "--mode", "offcpu", "--", str(examples_built / "idle_pool"), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)["threads"]
    workers = [t for t in threads if t["tid"] != t["pid"]]
    assert len(workers) == 4
    assert all(t["states"].get("condvar", 0) > 0.05 for t in workers), workers
    main = next(t for t in threads if t["tid"] == t["pid"])
    assert "condvar" not in main["states"]  # its join is not taken for a condvar wait
    advice = json.loads(perfsleuth("advise", "--format", "json", cwd=tmp_path).stdout)
    # idle workers wait for work, not for a lock: no contention to report (their
    # wake-ups' few percent of futex time on the CPU is no confident finding either)
    titles = [f["title"] for f in advice["findings"]]
    assert not [f for f in advice["findings"] if f["rule"] == "lock.contention"], titles
    locks = [f for f in advice["findings"] if f["kind"] == "lock-contention"]
    assert all(f["confidence"] < 0.5 for f in locks), titles


@needs_root
@pytest.mark.parametrize("mode", ["offcpu", "all"])
def test_zstd_threads_have_wall_mode_s_labels(mode: str, tmp_path: Path):
    """zstd -T4 (Debian's, no frame pointers): its main thread waits for its jobs in
    pthread_cond_wait, whose callers a frame-pointer walk loses; the futex's kind tells
    it from a join. Wall mode's DWARF stacks read it as condvar (71% of a run); offcpu
    and all mode read "other" (73%, 82%) before. Idle workers: condvar too."""
    if shutil.which("zstd") is None:
        pytest.skip("zstd not installed (apt-get install zstd)")
    text = tmp_path / "text"
    words = [f"word{i * 7919 % 10007}" for i in range(4_000_000)]
    text.write_text(" ".join(words))
    cmd = ["zstd", "-q", "-5", "-T4", "-f", "-o", str(tmp_path / "text.zst"), str(text)]
    proc = perfsleuth("record", "--mode", mode, "--", *cmd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)["threads"]
    main = next(t for t in threads if t["tid"] == t["pid"])["states"]
    # of the main thread's waits, the condvar's a fair part: before, all of it was "other"
    # (73-82% of the thread under load); on a quiet machine it runs ~77% and the rest of
    # its waits (reading the input, writing the output) are "other" too: 10.8% condvar
    # against 11.5% other in a clean-clone CI run
    waits = main.get("condvar", 0) + main.get("other", 0)
    assert waits > 0 and main.get("condvar", 0) > 0.25 * waits, main
    # the workers wait for jobs (some idle at -5: more threads than jobs); a busy one's
    # page faults are "other" (30% of one under load), which wall mode cannot see
    workers = [t["states"] for t in threads if t["tid"] != t["pid"]]
    assert any(s.get("condvar", 0) > 0.5 for s in workers), workers


MAIN_WAITS = r"""
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;
static int done;
static volatile unsigned long sink;

/* The worker works holding the lock, which it gets only once main waits: main waits
   on the condition variable for all of the work however the two are scheduled (with
   the work before the lock, main preempted for its 67 ms never waited). */
static void *worker(void *arg) {
    pthread_mutex_lock(&lock);
    for (unsigned long i = 0; i < 300000000UL; i++) sink += i;
    done = 1;
    pthread_cond_signal(&finished);
    pthread_mutex_unlock(&lock);
    return arg;
}

int main(void) {
    pthread_t thread;
    pthread_mutex_lock(&lock);
    pthread_create(&thread, NULL, worker, NULL);
    while (!done) pthread_cond_wait(&finished, &lock);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    puts("main_waits: done");
    return 0;
}
"""


@needs_root
def test_offcpu_mode_makes_no_cpu_findings_of_preempted_time(tmp_path: Path):
    """xz -T2 (Debian's) beside two busy loops: its workers are preempted in liblzma,
    time offcpu mode records as 'running' off the CPU. Before, it read "48.6% of the
    recorded time (on CPU) is in liblzma" (and locking's futex share) from it."""
    if shutil.which("xz") is None:
        pytest.skip("xz not installed (apt-get install xz-utils)")
    text = tmp_path / "text"
    text.write_text(" ".join(f"word{i * 7919 % 10007}" for i in range(600_000)))
    cmd = ["xz", "-T2", "-6", "--block-size=512KiB", "-k", "-f", str(text)]
    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range(2)]
    try:
        proc = perfsleuth("record", "--mode", "offcpu", "--", *cmd, cwd=tmp_path)
    finally:
        for loop in busy:
            loop.kill()
            loop.wait()
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)["threads"]
    assert any(t["states"].get("running", 0) > 0.05 for t in threads), threads  # preempted
    advice = json.loads(perfsleuth("advise", "--format", "json", "--all", cwd=tmp_path).stdout)
    titles = [f["title"].replace("off-CPU", "") for f in advice["findings"]]
    cpu = [title for title in titles if "CPU" in title]
    assert not cpu, cpu


@needs_root
def test_offcpu_mode_labels_the_main_threads_condvar_wait_as_wall_mode_does(tmp_path: Path):
    """The main thread's wait on a condition variable, its stack cut inside libc, is a
    condvar wait as in wall and all modes (pigz's main thread: 97% 'other' before,
    from a guess that took every main-thread wait there for a join); its join is not."""
    (tmp_path / "main_waits.c").write_text(MAIN_WAITS)
    program = tmp_path / "main_waits"
    subprocess.run(
        ["gcc", "-O2", "-pthread", "-o", str(program), str(tmp_path / "main_waits.c")], check=True
    )
    proc = perfsleuth("record", "--mode", "offcpu", "--", str(program), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)["threads"]
    main = next(t for t in threads if t["tid"] == t["pid"])
    assert main["states"].get("condvar", 0) > 0.5, main


PREEMPTED_THEN_WAITS = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile int done;
static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_cpu0(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

/* wakes every 100 us on the main thread's CPU: the main thread is preempted often */
static void *nudger(void *arg) {
    on_cpu0();
    while (!done) usleep(100);
    return arg;
}

int main(void) {
    on_cpu0();
    pthread_t thread;
    pthread_create(&thread, NULL, nudger, NULL);
    for (int round = 0; round < 5; round++) {
        for (double end = now() + 0.05; now() < end;) sink++;
        double at = now() + 0.1;
        struct timespec until = {(time_t)at, (long)((at - (time_t)at) * 1e9)};
        pthread_mutex_lock(&lock);
        pthread_cond_timedwait(&never, &lock, &until);
        pthread_mutex_unlock(&lock);
    }
    done = 1;
    pthread_join(thread, NULL);
    puts("preempted_then_waits: done");
    return 0;
}
"""


@needs_root
def test_a_often_preempted_thread_s_long_wait_keeps_its_stack(tmp_path: Path):
    """The main thread, preempted every ~100 us, then waiting 100 ms on a condition
    variable, five times: its preemptions used up the script's always-captured stacks,
    so each wait's stack was drawn 1 time in 8 and the rest kept without one ("other";
    before the change this failed in about half of the runs, all five waits undrawn);
    a Rust program's main thread waiting in rayon's pool read 78-91% "other" in offcpu
    mode where wall and all modes read condvar."""
    (tmp_path / "preempted.c").write_text(PREEMPTED_THEN_WAITS)
    program = tmp_path / "preempted"
    subprocess.run(
        ["gcc", "-O2", "-pthread", "-o", str(program), str(tmp_path / "preempted.c")], check=True
    )
    proc = perfsleuth("record", "--mode", "offcpu", "--", str(program), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)["threads"]
    main = next(t for t in threads if t["tid"] == t["pid"])["states"]
    waits = main.get("condvar", 0) + main.get("other", 0)
    assert waits > 0 and main.get("condvar", 0) > 0.8 * waits, main


@pytest.fixture
def path_without_bpftrace(tmp_path: Path) -> str:
    """A PATH with every system command but bpftrace."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin"):
        for tool in Path(directory).glob("*"):
            link = bin_dir / tool.name
            if tool.name != "bpftrace" and not link.exists():
                link.symlink_to(tool)
    return str(bin_dir)


@needs_root
def test_offcpu_without_bpftrace_falls_back_to_perf(
    examples_built: Path, tmp_path: Path, path_without_bpftrace: str
):
    proc = subprocess.run(
        [str(VENV_BIN / "perfsleuth"), "record", "--mode", "offcpu", "--"]
        + [str(examples_built / "prodcons"), "20000"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PATH": path_without_bpftrace},
    )
    assert proc.returncode == 0, proc.stderr
    assert "bpftrace not found" in proc.stderr
    runs = json.loads(perfsleuth("runs", "--format", "json", cwd=tmp_path).stdout)
    assert runs[0]["mode"] == "offcpu"
    doc = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)
    assert doc["unit"] == "ns"
    assert any("mutex" in t["states"] for t in doc["threads"])


# yarn.c's twist (pigz): the thread that changes the value broadcasts and works on under
# the lock, so the waiter, woken, retakes the mutex inside pthread_cond_wait for long
RELOCK = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long value;
static volatile int done;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void spin(double s) {
    for (double end = now() + s; now() < end;) {}
}

static void *waiter(void *arg) {
    pthread_setname_np(pthread_self(), "waiter");
    long seen = 0;
    pthread_mutex_lock(&lock);
    while (!done) {
        while (value == seen && !done) pthread_cond_wait(&changed, &lock);
        seen = value;
    }
    pthread_mutex_unlock(&lock);
    return arg;
}

static void *twister(void *arg) {
    for (double end = now() + 1.5; now() < end;) {
        pthread_mutex_lock(&lock);
        value++;
        pthread_cond_broadcast(&changed);
        spin(300e-6);
        pthread_mutex_unlock(&lock);
        spin(100e-6);
    }
    return arg;
}

int main(void) {
    pthread_t w, t;
    pthread_create(&w, NULL, waiter, NULL);
    pthread_create(&t, NULL, twister, NULL);
    pthread_join(t, NULL);
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    pthread_join(w, NULL);
    puts("relock: done");
    return 0;
}
"""


@pytest.mark.parametrize("mode", ["wall", "offcpu", "all"])
def test_a_condition_wait_retaking_its_mutex_is_condvar_in_every_mode(mode: str, tmp_path: Path):
    """The waiter's whole wait is in pthread_cond_wait, as its own clock would count it;
    offcpu and all modes, whose stacks stop in glibc's __lll_lock_wait, read the relock
    `mutex` (pigz's writer: 27-33% where wall mode read 0)."""
    if mode != "wall" and os.geteuid() != 0:
        pytest.skip("eBPF needs root")
    (tmp_path / "relock.c").write_text(RELOCK)
    program = tmp_path / "relock"
    subprocess.run(
        ["gcc", "-O2", "-g", "-pthread", "-o", str(program), str(tmp_path / "relock.c")],
        check=True,
    )
    proc = perfsleuth("record", "--mode", mode, "--", str(program), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)["threads"]
    named = [t for t in threads if t["name"] == "waiter"]
    assert named, (proc.stderr, [(t["tid"], t["name"]) for t in threads])
    waiter = named[0]
    assert waiter["states"].get("condvar", 0) > 0.5, waiter
    # offcpu mode: the on-CPU probe keys its lock samples by the leaf alone (no caller)
    assert waiter["states"].get("mutex", 0) < 0.1, waiter


@needs_root
def test_a_reader_copying_from_the_page_cache_is_not_waiting_for_io(tmp_path: Path):
    """cat of a file in the page cache, all mode: perf's samples of it copying the pages
    (read's _copy_to_iter, on the CPU) were `io` 33% of it, and advise said "33.0% of a
    working thread's time is spent waiting for I/O" where it never blocked. pzstd's
    reader, preempted there (__cond_resched), read `io` 11-17% in offcpu and all modes
    while the kernel saw it blocked 0.1% outside its condition waits."""
    text = tmp_path / "text"
    text.write_text(" ".join(f"word{i * 7919 % 100003} {i}" for i in range(3_000_000)))
    # Written back before cat reads it, so that no writeback runs under the reads: cat read
    # `io` 52% once at load 12 while other engineers' builds wrote, most likely waiting
    # for pages locked for writeback (not proven; a reader of locked pages does wait).
    with open(text, "rb") as written:
        os.fsync(written.fileno())
    cmd = ["sh", "-c", f"cat {' '.join([str(text)] * 40)} > /dev/null"]
    proc = perfsleuth("record", "--mode", "all", "--", *cmd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)["threads"]
    cat = next(t for t in threads if t["name"] == "cat")
    assert cat["states"].get("io", 0) < 0.1, threads
    advice = json.loads(perfsleuth("advise", "--format", "json", "--all", cwd=tmp_path).stdout)
    assert not [f for f in advice["findings"] if f["rule"] == "offcpu.io-wait"], advice
