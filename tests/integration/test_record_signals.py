"""Signals during `record` (issue 19 item 11), with the real perf, eu-stack and valgrind.

A signal sent to perfsleuth while the target runs is forwarded to it; the run is kept
and perfsleuth exits with the target's status (128+signal when the signal ends it).
SIGKILL of perfsleuth takes perf and the target down, and the sweeper removes the
temporary folder. Every wait is bounded: the spinning target stops by itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PERFSLEUTH = str(Path(sys.executable).parent / "perfsleuth")
SPIN_S = 60  # the target's own limit, should forwarding fail
BOUND_S = 120
# Spins in the shell (so every mode can sample it), then ends by itself.
SPIN = f"end=$(( $(date +%s) + {SPIN_S} )); while [ $(date +%s) -lt $end ]; do :; done"
# Loops (so the sampling modes have samples), then ends itself with SIGSEGV. Under
# valgrind (count mode) the loop runs ~25 times slower: 300,000 turns used 26.6 s of CPU
# and took 216 s at load 12.5, past BOUND_S; counting needs no more than a few turns.
SEGV_TURNS = {"cpu": 300_000, "wall": 300_000, "count": 3_000}


def start(tmp_path: Path, mode: str, script: str, marker: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    argv = [PERFSLEUTH, "record", "--store", str(tmp_path / "S"), "--mode", mode]
    argv += ["--", "/bin/sh", "-c", script, marker]
    return subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path)


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line names marker (the target, and perf -p of it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and b"perfsleuth" not in cmdline.split(b"\0")[0]:
                found.append(int(entry.name))
    return found


POLLS = BOUND_S * 10  # wait_until looks every 0.1 s, for at most BOUND_S


def wait_until(check, what: str) -> None:
    """Poll `check` until it holds; fail saying `what` was never seen (a bound on the
    wait, not a measure of speed)."""
    for _ in range(POLLS):
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"never seen: {what}")


def target_pid(marker: str) -> int:
    """The running target: the shell with marker as its $0, once the gate let it go."""
    found: list[int] = []

    def running() -> bool:
        found[:] = [p for p in processes_with(marker) if _exe_is_shell(p)]
        return bool(found)

    wait_until(running, f"the target {marker} never started")
    time.sleep(1.0)  # let it be sampled a while
    return found[0]


def _exe_is_shell(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return cmdline[:2] == [b"/bin/sh", b"-c"] and b"read _" not in cmdline[2]


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("perfsleuth-*"))


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_signal_is_forwarded_and_the_run_kept(tmp_path: Path, sig: int, status: int) -> None:
    marker = f"spin-{sig}"
    proc = start(tmp_path, "cpu", SPIN, marker)
    target_pid(marker)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=BOUND_S)
    assert proc.returncode == status, err
    assert "stored run 1" in err and "Traceback" not in err
    assert f"the command exited with status {status}" in err
    assert processes_with(marker) == []
    assert leftovers(tmp_path) == []


def test_signal_to_the_process_group_as_a_terminal_sends_it(tmp_path: Path) -> None:
    marker = "spin-group"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    argv = [PERFSLEUTH, "record", "--store", str(tmp_path / "S"), "--mode", "cpu"]
    proc = subprocess.Popen(
        [*argv, "--", "/bin/sh", "-c", SPIN, marker],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
    )
    target_pid(marker)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=BOUND_S)
    assert proc.returncode == 130, err
    assert processes_with(marker) == []
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", ["cpu", "wall"])
def test_sigkill_of_perfsleuth_leaves_nothing(tmp_path: Path, mode: str) -> None:
    marker = f"spin-kill-{mode}"
    proc = start(tmp_path, mode, SPIN, marker)
    target_pid(marker)
    assert leftovers(tmp_path) != []
    proc.kill()
    proc.communicate(timeout=BOUND_S)
    wait_until(lambda: processes_with(marker) == [], "perf or the target outlived perfsleuth")
    wait_until(lambda: leftovers(tmp_path) == [], "the temporary folder was left behind")


@pytest.mark.parametrize("mode", ["cpu", "wall", "count"])
def test_a_target_killed_by_sigsegv_gives_139(tmp_path: Path, mode: str) -> None:
    segv = f"i=0; while [ $i -lt {SEGV_TURNS[mode]} ]; do i=$((i+1)); done; kill -SEGV $$"
    proc = start(tmp_path, mode, segv, f"segv-{mode}")
    _, err = proc.communicate(timeout=BOUND_S)
    assert proc.returncode == 139, err
    assert "Traceback" not in err
    assert leftovers(tmp_path) == []


def test_sigkill_of_a_cache_recording_takes_valgrind_down(
    tmp_path: Path, examples_built: Path
) -> None:
    """Cache mode's valgrind (lackey) never outlives perfsleuth either."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    program = str(examples_built / "conntable")
    argv = [PERFSLEUTH, "record", "--store", str(tmp_path / "S"), "--mode", "cache"]
    argv += ["--function", "handle_packet", "--", program, "200000", "2000000"]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    wait_until(lambda: processes_with(program) != [], "valgrind never started")
    proc.kill()
    proc.communicate(timeout=BOUND_S)
    wait_until(lambda: processes_with(program) == [], "valgrind outlived perfsleuth")
    wait_until(lambda: leftovers(tmp_path) == [], "the temporary folder was left behind")


@pytest.mark.parametrize("mode", ["cpu", "wall", "offcpu", "python"])
def test_sigint_ends_an_attached_recording_and_keeps_it(tmp_path: Path, mode: str) -> None:
    """`kill -INT` of perfsleuth (not the terminal's Ctrl-C, which reaches perf too)
    during --pid ends the recording early and stores it, as `perf record -p` does."""
    if mode == "offcpu" and os.geteuid() != 0:
        pytest.skip("eBPF needs root")
    spin = ["/bin/sh", "-c", SPIN, f"spin-attached-{mode}"]
    if mode == "python":
        spin = [sys.executable, "-c", f"import time\nend = time.time() + {SPIN_S}\n"]
        spin[-1] += "while time.time() < end: pass"
    spinner = subprocess.Popen(spin)
    try:
        argv = [PERFSLEUTH, "record", "--store", str(tmp_path / "S"), "--mode", mode]
        proc = subprocess.Popen(
            [*argv, "--pid", str(spinner.pid), "--duration", str(SPIN_S)],
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        assert proc.stderr is not None
        said = proc.stderr.readline()  # once attached: a signal before would end it
        assert said.startswith(f"perfsleuth: recording process {spinner.pid} for"), said
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=BOUND_S)
    finally:
        spinner.kill()
        spinner.wait()
    assert proc.returncode == 0, err
    assert "stored run 1" in err and "Traceback" not in err
    assert spinner.returncode == -signal.SIGKILL  # still spinning: the signal was not its


def test_perfsleuth_stopped_and_continued_records_on(tmp_path: Path) -> None:
    """Ctrl-Z then fg, or a SIGSTOP and SIGCONT: CPython's sigtimedwait, interrupted and
    finding its time up, returned a siginfo it never filled, and the wall recording
    ended in a traceback (os.kill: EINVAL), or forwarded a SIGINT nobody sent."""
    marker = "spin-stopped"
    short = SPIN.replace(str(SPIN_S), "4")
    proc = start(tmp_path, "wall", short, marker)
    target_pid(marker)
    while proc.poll() is None:
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.08)  # longer than its 50 ms waits: each interrupted one is over
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.02)
    _, err = proc.communicate(timeout=BOUND_S)
    assert proc.returncode == 0, err
    assert "stored run 1" in err and "Traceback" not in err
