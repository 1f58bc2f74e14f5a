"""wallsnap, wall mode's snapshotter (wall_snapshotter/wallsnap.c): found or built,
and run for the length of a recording.

It stops every thread of the target at one instant per snapshot, where eu-stack
stops them one after another (why that matters: docs/offcpu.md, Limits). It links
against elfutils' libdw (Debian's libdw-dev), which eu-stack itself is built on.
Setup builds it beside the virtualenv (`python -m perfsleuth.collect.wallsnap`), so
every user of the installation has it; otherwise it is built on first use into the
user's cache (about a second with the C compiler). Where it cannot be built, wall
mode falls back to eu-stack.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from ..cpu_cache_projections.calibrate import cache_dir
from ..errors import UserError
from .target import spawn

SOURCE = Path(__file__).with_name("wall_snapshotter") / "wallsnap.c"
HEADERS = Path("/usr/include/elfutils")
LIBS = ["-ldw", "-lelf", "-lm", "-pthread"]
NAME = "wallsnap"
NOT_PERMITTED = 3  # wallsnap's exit status when the process cannot be traced
STOP_TIMEOUT_S = 30.0
TERM_GRACE_S = 5.0  # after SIGTERM, for giving boosted threads their policy back


def _key() -> str:
    """The source and libdw's version: a build of either is a new binary."""
    version = HEADERS / "version.h"
    stamp = version.read_bytes() if version.exists() else b""
    return hashlib.sha256(SOURCE.read_bytes() + stamp).hexdigest()[:16]


def installed_path() -> Path:
    """Where setup puts it: beside the virtualenv, readable by every user."""
    return Path(sys.prefix) / "libexec" / f"{NAME}-{_key()}"


@lru_cache(maxsize=1)
def binary() -> str | None:
    """The snapshotter's path, built into the user's cache if setup did not; None
    where it cannot be built (no C compiler or no libdw headers)."""
    for candidate in (installed_path(), cache_dir() / f"{NAME}-{_key()}"):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    try:
        return str(build(cache_dir() / f"{NAME}-{_key()}"))
    except (OSError, subprocess.CalledProcessError):
        return None


def build(dest: Path) -> Path:
    """Compile into a temporary file renamed into place (two builds may race)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not (HEADERS / "libdwfl.h").exists():
        raise OSError("needs a C compiler and libdw's headers (libdw-dev)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=f".{NAME}-", dir=dest.parent)
    os.close(fd)
    try:
        argv = [compiler, "-O2", "-o", staging, str(SOURCE), *LIBS]
        subprocess.run(argv, check=True, capture_output=True)
        os.chmod(staging, 0o755)
        os.replace(staging, dest)
    finally:
        Path(staging).unlink(missing_ok=True)
    return dest


class Ended(Exception):
    """wallsnap ended before the recording did: killed, or failed."""


class Snapshotter:
    """One wallsnap process snapshotting pid at rate_hz into out_path."""

    def __init__(self, tool: str, pid: int, rate_hz: float, out_path: Path) -> None:
        self.tool = tool
        self.pid = pid
        self.out_path = out_path
        # a file, not a pipe: nobody reads while it runs, and a full pipe would stop it
        self.err_path = out_path.with_suffix(".err")
        # the threads it makes realtime and their own policies, kept if it is killed
        self.journal = out_path.with_suffix(".journal")
        env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
        with open(out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = spawn(
                [tool, str(pid), f"{rate_hz:g}", str(self.journal)],
                # not SIGKILL: it first gives the threads it made realtime their policy back
                death_signal=signal.SIGTERM,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                env=env,
                # Ctrl-C is the target's (we end it ourselves): a process group of its
                # own, not a session, which is a scheduler autogroup of its own where it
                # waited up to 1.8 s for a CPU after each pass (docs/offcpu.md)
                process_group=0,
            )

    def check(self) -> None:
        """A one-line error if the target cannot be traced (wallsnap gave up); Ended
        if it was killed or failed otherwise (the recording ends there)."""
        status = self.proc.poll()
        if status not in (None, 0, NOT_PERMITTED):
            raise Ended
        if status == NOT_PERMITTED:
            raise UserError(
                f"cannot ptrace process {self.pid}: not permitted; record your own "
                "processes, or run as root (check kernel.yama.ptrace_scope, and that no "
                "debugger is attached)"
            )

    def stop(self) -> str:
        """Ends it after the snapshot under way; returns what it wrote. A one-line
        error when it failed before writing a snapshot."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.terminate()  # SIGKILL would leave its boosted threads realtime
            try:
                self.proc.wait(TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.returncode == NOT_PERMITTED:
            self.check()
        text = self.out_path.read_text(errors="replace")
        complaint = self.err_path.read_text(errors="replace").strip().splitlines()
        if self.proc.returncode:
            self.give_back()
            text = text[: text.rfind("\nSNAPSHOT ") + 1]  # the last one may be cut short
        if self.proc.returncode and "\nSNAPSHOT " not in text and complaint:
            raise UserError(f"wall-clock snapshots failed: {complaint[-1]}")
        return text

    def give_back(self) -> None:
        """After an end by a signal (a SIGKILL cannot be caught) or an error: every
        thread wallsnap had made realtime gets its own policy back (its guardian
        process does that too, unless it was killed with it), and stderr says so."""
        status = self.proc.returncode
        how = f"was killed by {signal.Signals(-status).name}" if status < 0 else f"ended ({status})"
        try:
            done = subprocess.run(
                [self.tool, "--give-back", str(self.journal)],
                capture_output=True,
                text=True,
                timeout=STOP_TIMEOUT_S,
            )
            lines = [line.split() for line in done.stdout.splitlines()]
        except (OSError, subprocess.TimeoutExpired):
            lines = [["?", "failed"]]
        restored = [tid for tid, result in lines if result == "restored"]
        failed = [tid for tid, result in lines if result != "restored"]
        if status > 0 and not lines:
            return  # it said what failed on stderr, and made no thread realtime
        said = f"perfsleuth: wallsnap {how}; the recording ends there"
        if restored:
            said += f"; {len(restored)} threads it had made realtime have their own policy back"
            said += f" ({', '.join(restored)})"
        if failed:
            said += f"; COULD NOT give threads {', '.join(failed)} their own policy back:"
            said += " reset them with `chrt -o -p 0 TID`"
        print(said, file=sys.stderr)


def main() -> int:
    """Setup's step: build into the virtualenv unless already there."""
    dest = installed_path()
    if os.access(dest, os.X_OK):
        return 0
    try:
        build(dest)
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"wallsnap not built ({err}); wall mode will use eu-stack", file=sys.stderr)
        return 0
    print(f"wallsnap built: {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
