"""A cgroup that holds the recorded command, so perf can sample it per CPU.

`perf record -- CMD` samples per task: each process starts a fresh period of its own
CPU time, and one that exits within it is never sampled (sampling_gap.py). A command
running 1,000 children of 0.6 ms of CPU each gave 26 samples at 999 Hz. Sampled per
CPU and limited to a cgroup holding the command and its descendants (`perf record -a
-G`), a CPU's period runs on across the processes it runs in turn: 637 samples for
the same command, 91% of its CPU time.

The cgroup is made inside perfsleuth's own, so the limits perfsleuth runs under hold
for the command too, in the hierarchy perf looks in: cgroup v1's perf_event
controller, else cgroup2 (perf's cgroupfs_find_mountpoint). It needs per-CPU perf
events (root, CAP_PERFMON or kernel.perf_event_paranoid <= 0) and a cgroup folder we
may write; where either is missing, the caller samples per task and says why.
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from .perf_access import Access, current_access, may_sample_cpus

MOUNTS = Path("/proc/self/mounts")
OWN = Path("/proc/self/cgroup")
PREFIX = "perfsleuth-"
V1_CONTROLLER = "perf_event"


@dataclass(frozen=True)
class CommandCgroup:
    folder: Path
    name: str  # the folder relative to the hierarchy's mount point: perf's -G NAME

    def add(self, pid: int) -> None:
        (self.folder / "cgroup.procs").write_text(f"{pid}\n")

    def remove(self) -> None:
        """Hand any process still in it (a daemon the command left) back to the parent
        cgroup, then remove the folder."""
        _move_all(self.folder, self.folder.parent)
        with suppress(OSError):
            self.folder.rmdir()


def hierarchy(mounts: str) -> tuple[Path, str] | None:
    """(mount point, controller) of the hierarchy perf -G looks in: cgroup v1's
    perf_event, else cgroup2 (controller "")."""
    unified = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        point, kind, options = fields[1], fields[2], fields[3].split(",")
        if kind == "cgroup" and V1_CONTROLLER in options:
            return Path(point), V1_CONTROLLER
        if kind == "cgroup2" and unified is None:
            unified = Path(point)
    return (unified, "") if unified else None


def own_path(cgroups: str, controller: str) -> str | None:
    """This process's cgroup in the hierarchy of CONTROLLER ("" for cgroup2), relative
    to its mount point, from /proc/self/cgroup."""
    for line in cgroups.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _id, controllers, path = parts
        if controller in controllers.split(","):
            return path.strip("/")
    return None


def create(
    pid: int, mounts: Path = MOUNTS, own: Path = OWN, access: Access | None = None
) -> CommandCgroup | str:
    """A new cgroup holding PID, or the reason there can be none."""
    access = access or current_access()
    if not may_sample_cpus(access):
        return (
            "per-CPU sampling needs root or CAP_PERFMON "
            f"(kernel.perf_event_paranoid={access.paranoid})"
        )
    try:
        found = hierarchy(mounts.read_text())
        cgroups = own.read_text()
    except OSError as err:
        return f"cannot read the cgroups ({err.strerror})"
    if found is None:
        return "no cgroup2 or perf_event cgroup hierarchy is mounted"
    mount, controller = found
    path = own_path(cgroups, controller)
    if path is None:
        return f"this process is in no cgroup of {mount}"
    return _make(mount, mount / path, pid)


def _make(mount: Path, parent: Path, pid: int) -> CommandCgroup | str:
    _remove_stale(parent)
    folder = parent / f"{PREFIX}{os.getpid()}-{pid}"
    try:
        folder.mkdir()
    except OSError as err:
        return f"cannot make a cgroup in {parent} ({err.strerror})"
    group = CommandCgroup(folder, str(folder.relative_to(mount)))
    try:
        group.add(pid)
    except OSError as err:
        group.remove()
        return f"cannot move the command into {folder} ({err.strerror})"
    return group


def _remove_stale(parent: Path) -> None:
    """Remove the empty cgroups of perfsleuth processes that are gone (SIGKILLed
    before they could remove theirs)."""
    for folder in parent.glob(f"{PREFIX}*"):
        owner = folder.name.removeprefix(PREFIX).split("-")[0]
        if owner.isdigit() and not _alive(int(owner)):
            with suppress(OSError):
                folder.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, and another user's
        pass
    return True


def _move_all(source: Path, to: Path) -> None:
    with suppress(OSError):
        for pid in (source / "cgroup.procs").read_text().split():
            with suppress(OSError):
                (to / "cgroup.procs").write_text(f"{pid}\n")
