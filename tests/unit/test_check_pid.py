"""record --pid's check of the process, on real processes: a zombie and a kernel thread
are one clear line before any recorder starts."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from perfsleuth.collect.target import check_pid
from perfsleuth.errors import UserError

BOUND_S = 30


def test_a_zombie_is_said_to_have_exited() -> None:
    """A child its parent has not reaped: all mode said "perf record -p did not start
    ... run as root", wall and offcpu modes two lines each."""
    child = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + BOUND_S
        stat = Path(f"/proc/{child.pid}/stat")
        while stat.read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        with pytest.raises(UserError, match=r"has exited \(a zombie"):
            check_pid(child.pid)
    finally:
        child.wait()


def test_a_kernel_thread_is_said_to_be_one() -> None:
    """kthreadd, PID 2 on Linux: wall mode said "no stack snapshot was taken (the process
    ended first, or ptrace failed)", all mode named its deleted perf.data."""
    if "kthreadd" not in Path("/proc/2/stat").read_text():
        pytest.skip("PID 2 is not kthreadd here (a PID namespace)")
    with pytest.raises(UserError, match=r"process 2 \(kthreadd\) is a kernel thread"):
        check_pid(2)
