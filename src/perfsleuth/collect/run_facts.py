"""Facts about the machine and the working copy, kept with every run."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path

from ..model.run import RunInfo

OWN_COMMAND = "record"  # RunInfo.source of `record`/`run` of the user's own command
ATTACHED = "attach"  # RunInfo.source of `record --pid`


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def git_revision(cwd: str) -> str:
    """HEAD of the git repository containing cwd, with '+dirty' if modified; '' if none."""
    try:
        rev = subprocess.run(
            ["git", "-C", cwd, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if rev.returncode != 0:
            return ""
        dirty = subprocess.run(
            ["git", "-C", cwd, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return ""


def is_own_command(info: RunInfo) -> bool:
    """Was the run recorded from the user's own command? Only then is its debug info the
    user's own, and only then may its working directory and the paths it names be read:
    an imported file, or a process attached by PID, names whatever files it likes."""
    return info.source == OWN_COMMAND


def working_root(info: RunInfo) -> Path | None:
    """The run's working directory as a source root, for the user's own command only;
    never / (that would open every file the debug info names)."""
    if not is_own_command(info) or not info.cwd or Path(info.cwd).resolve() == Path("/"):
        return None
    return Path(info.cwd)


def new_run(command: str, mode: str, source: str = OWN_COMMAND) -> RunInfo:
    cwd = os.getcwd()
    return RunInfo(
        command=command,
        cwd=cwd,
        mode=mode,
        host=socket.gethostname(),
        cpu_model=cpu_model(),
        kernel=platform.release(),
        git_rev=git_revision(cwd),
        source=source,
        meta={"cpus": os.cpu_count() or 1},  # what the run's threads could run on at once
    )
