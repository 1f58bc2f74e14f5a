"""record --pid's check of the process, on real processes: a zombie and a kernel thread
are one clear line before any recorder starts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from perfsleuth.collect.target import check_pid
from perfsleuth.errors import UserError


def test_a_zombie_is_said_to_have_exited() -> None:
    """A child its parent has not reaped: all mode said "perf record -p did not start
    ... run as root", wall and offcpu modes two lines each."""
    child = subprocess.Popen(["true"])
    try:
        # waits for the exit and leaves the child unreaped: a zombie, without a clock
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        stat = Path(f"/proc/{child.pid}/stat")
        assert stat.read_text().rpartition(")")[2].split()[0] == "Z"
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
