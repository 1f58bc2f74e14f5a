"""Facts about the machine and the working copy, kept with every run."""

from __future__ import annotations

import os
import platform
import socket
import subprocess

from ..model.run import RunInfo


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


def new_run(command: str, mode: str, source: str = "record") -> RunInfo:
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
    )
