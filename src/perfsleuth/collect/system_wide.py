"""Whole-host sampling: one `perf record -a` that rotates its perf.data every window.

perf samples every process on every CPU, user and kernel, and with
`--switch-output=<N>s` closes the current file every N seconds as
`perf.data.<timestamp>` (complete: header, build-ids, and the mmaps of every
process, which perf synthesizes again at each rotation) and starts a new one.
The caller turns each rotated file into a window.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import time
from pathlib import Path

from ..errors import UserError
from .perf import NO_BPF_EVENTS, call_graph_args, perf_binary

PR_SET_PDEATHSIG = 1
ROTATED = "perf.data.*"
CLOCK = "CLOCK_MONOTONIC"


def _die_with_parent() -> None:
    # perf must not outlive an agent killed with SIGKILL: SIGINT makes perf write
    # its last file, which the restarted agent picks up.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGINT)


class SystemRecorder:
    """`perf record -a -g` rotating perf.data files into `workdir` every `window_s`."""

    def __init__(self, workdir: Path, *, freq: int, window_s: int, call_graph: str) -> None:
        self.workdir = workdir
        self.argv = [
            perf_binary(),
            "record",
            "-a",
            *NO_BPF_EVENTS,
            "-F",
            str(freq),
            *call_graph_args(call_graph),
            # After --call-graph, which turns on data addresses for DWARF (perf's
            # record_opts__parse_callchain): without them the kernel reports, and perf
            # synthesizes at each rotation, only executable mappings, all the reader uses
            # (native/src/reader.rs); a loaded host's files were 40% smaller.
            "--no-data",
            # sample times on py-spy's clock: the agent's Python frames are spliced by time
            # (agent/python_sampler.py); perf's default clock is the scheduler's
            "-k",
            CLOCK,
            # The host symbolizes from its own binaries: no copies into ~/.debug.
            # No build-id pass either (-B): at each rotation it re-reads the whole
            # file and keeps every thread and map it ever saw, so perf grew ~10 MB
            # a window (13 -> 132 MB in a minute of 5 s windows) and used 40% more
            # CPU; the agent reads the build-ids of the files it symbolizes itself.
            "--no-buildid-cache",
            "--no-buildid",
            f"--switch-output={window_s}s",
            "-o",
            str(workdir / "perf.data"),
        ]
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "perf.log"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log, "wb") as log:
            # Its own session: Ctrl-C reaches the agent only, which stops perf in order.
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise UserError(f"perf record -a failed to start: {self.last_error()}")

    def last_error(self) -> str:
        try:
            lines = [x for x in self.log.read_text(errors="replace").splitlines() if x.strip()]
        except OSError:
            return "no message"
        return lines[-1].strip() if lines else "no message"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rotated(self) -> list[Path]:
        """Finished files, oldest first (perf names them by the time it closed them)."""
        return sorted(self.workdir.glob(ROTATED))

    def stop(self, timeout: float = 30.0) -> None:
        """SIGINT: perf writes the current window as one last rotated file and exits."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
