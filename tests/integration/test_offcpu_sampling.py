"""--mode offcpu samples stacks, but keeps every block's time: a process that
blocks once, for a second, is there in full, with its stack and state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.collect import offcpu
from perfsleuth.collect.options import RecordOptions
from perfsleuth.formats.tool_output import bpftrace_stacks
from perfsleuth.store.runs import Store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="eBPF needs root"),
]

VENV_BIN = Path(sys.executable).parent
SLEEP_S = 1.0


def perfsleuth(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = [str(VENV_BIN / "perfsleuth"), *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_single_long_sleep_keeps_its_time_its_state_and_the_sampling_is_stated(
    tmp_path: Path,
):
    # the shell forks `sleep`, a child process the recording follows
    command = ["sh", "-c", f"sleep {SLEEP_S}; echo done"]
    proc = perfsleuth("record", "--mode", "offcpu", "--", *command, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    threads = json.loads(perfsleuth("threads", "--format", "json", cwd=tmp_path).stdout)
    sleeper = next(t for t in threads["threads"] if t["name"] == "sleep")
    assert sleeper["total"] >= 0.9 * SLEEP_S * 1e9
    assert sleeper["states"].get("sleep", 0) > 0.9
    store = Store(tmp_path / ".perfsleuth")
    sampling = store.load(store.resolve("latest")).meta["offcpu_stack_sampling"]
    assert sampling["every"] == offcpu.SAMPLE_EVERY
    assert 0 < sampling["sampled_share"] <= 1


def test_a_wait_s_time_not_drawn_goes_to_stacks_of_its_own_futex_operation(
    tmp_path: Path, examples_built: Path
):
    # GNU sort's merge threads block on a node mutex and a queue condvar for the same
    # lengths: keyed by the scheduler's state alone, the mutex blocks not drawn were
    # spread over whichever stacks were, and one thread in 13 read 3-6 points of its
    # mutex waiting as condvar. prodcons's consumers block on both too.
    options = RecordOptions(mode="offcpu")
    program = [str(examples_built / "prodcons"), "20000"]
    tool = offcpu.check_available()
    target, maps, session = offcpu._traced(tool, options, program, tmp_path)
    target.release()
    target.wait(None, tick=maps.tick, interval=0.005)
    session.finish()
    groups: dict[int, list[bpftrace_stacks.SampledBlocks]] = {}
    for block in session.capture.sampled:
        _tgid, _tid, state, _length = block.block_class
        if state & 0xFF == 1:  # S: blocked
            groups.setdefault(state & ~0xFF, []).append(block)
    lock_wait, condition_wait = (offcpu.WAIT_CLASSES[op] for op in (0, 9))
    assert lock_wait in groups and condition_wait in groups, sorted(groups)
    for wait_class, blocks in groups.items():
        records = bpftrace_stacks.records(bpftrace_stacks.Capture(sampled=blocks), {})
        profile = offcpu.to_profile(records, maps, guess_cut_waits=True)
        for stack, _weight, _count, _t, state in profile.rows():
            names = {profile.frames[f].function for f in stack}
            if wait_class == lock_wait:  # a lock's, a relock's, or a signaller's (FUTEX_WAIT)
                known = [s for frame, s in FUTEX_WAIT_NOT_A_LOCK if frame in names]
                assert state == (known[0] if known else "mutex"), (state, names)
            else:  # a condition variable's, or the main thread's join (a shared futex)
                assert state in ("condvar", "other") and "__lll_lock_wait" not in names


# FUTEX_WAITs that are no lock call's: pthread_cond_wait retaking its mutex (the
# condition wait's), pthread_cond_signal waiting for the old waiters to leave (glibc's)
FUTEX_WAIT_NOT_A_LOCK = (
    ("__pthread_mutex_cond_lock", "condvar"),
    ("__condvar_quiesce_and_switch_g1", "other"),
)
