"""collect/offcpu.py's bpftrace session: why a session printed no blocks."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.collect import offcpu

DEAF = (
    "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "print('deaf', flush=True); signal.pause()"
)


def _session(tmp_path: Path, argv: list[str]) -> offcpu.BpftraceSession:
    """A session around a stand-in process, as __init__ leaves one once attached."""
    session = object.__new__(offcpu.BpftraceSession)
    session.out, session.err = tmp_path / "offcpu.json", tmp_path / "offcpu.err"
    session.out.write_text("")
    session.err.write_text("")
    session.oncpu_hz, session.pid, session.names_at_start = 0, 1, {}
    session.ended_early = session.cut_off = False
    session.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    return session


def _finished(tmp_path: Path, code: str, ready: str) -> offcpu.BpftraceSession:
    """A session around a Python stand-in, finished once it printed READY; empty."""
    session = _session(tmp_path, [sys.executable, "-c", code])
    assert session.proc.stdout is not None
    assert session.proc.stdout.readline() == f"{ready}\n"
    try:
        assert session.finish() == []
    finally:
        session.proc.kill()
        session.proc.wait()
    return session


def test_a_tracer_killed_before_printing_is_said_so(tmp_path: Path, monkeypatch) -> None:
    """Stopped, bpftrace prints its maps; one killed at the time limit printed nothing,
    and the run read "it ended before tracing started, or never left the CPU". No time
    limit at all here: a process that ignores SIGINT is killed at once."""
    monkeypatch.setattr(offcpu, "PRINT_TIMEOUT_S", 0)
    session = _finished(tmp_path, DEAF, "deaf")  # SIGINT ignored
    assert session.cut_off and "was killed" in session.why_empty()


# bpftrace 0.17 misses a SIGINT that comes while it handles an event, and polls on
MISSES_SIGINT = (
    "import signal; signal.signal(signal.SIGINT, lambda *_: None); "
    "print('polling', flush=True); signal.pause(); signal.pause()"
)


def test_a_tracer_that_missed_its_sigint_is_asked_again_not_killed(
    tmp_path: Path, monkeypatch
) -> None:
    """It was killed at PRINT_TIMEOUT_S (120 s), having printed nothing: 'no off-CPU
    time was recorded'. The bound here only keeps a failing test from waiting long."""
    monkeypatch.setattr(offcpu, "PRINT_TIMEOUT_S", 60)
    session = _finished(tmp_path, MISSES_SIGINT, "polling")  # its SIGINT handler set
    assert session.proc.returncode == -signal.SIGTERM and not session.cut_off


@pytest.mark.parametrize("code, said", [("pass", "stopped while recording"), (None, "nothing")])
def test_an_empty_session_says_whether_bpftrace_ended_on_its_own(
    tmp_path: Path, code: str | None, said: str
) -> None:
    # sleep(1) ends on SIGINT whenever it comes (conftest.py: not ignored); Python's
    # signal.pause() could take one between its handler's check and the pause, and wait on.
    argv = [sys.executable, "-c", code] if code else ["sleep", "600"]
    session = _session(tmp_path, argv)
    if code:
        session.proc.wait()
    assert session.finish() == []
    assert said in session.why_empty() and not session.cut_off
