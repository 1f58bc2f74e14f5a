"""What a pid was: executable, build-id, cgroup and libraries, read from /proc while it lives.

perf.data gives each sample its pid, tid and comm; the rest is read here. A
process may exit before its window is closed, so the table is refreshed every
few seconds (only pids not seen before are read) and keeps what it learnt for a
few windows after a pid is gone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..model.fleet import Process
from ..symbols import build_id_of

# Forget an exited pid after this many windows (its samples are in by then).
KEEP_WINDOWS = 3


def read_process(pid: int, proc: Path = Path("/proc")) -> Process | None:
    """exe, build-id and cgroup of a live pid; None when it is gone."""
    base = proc / str(pid)
    try:
        exe = os.readlink(base / "exe")
    except FileNotFoundError:
        return None
    except OSError:
        exe = ""  # kernel threads have no exe
    exe = exe.removesuffix(" (deleted)")
    try:
        cgroup = _cgroup((base / "cgroup").read_text())
    except OSError:
        cgroup = ""
    return Process(
        exe=exe, build_id=_build_id(base, exe), cgroup=cgroup, libraries=_libraries(base)
    )


def _libraries(base: Path) -> tuple[str, ...]:
    """The shared objects the process has mapped, for `fleet libraries`."""
    try:
        lines = (base / "maps").read_text().splitlines()
    except OSError:
        return ()
    paths = {fields[5] for fields in map(str.split, lines) if len(fields) >= 6}
    return tuple(sorted(p for p in paths if p.startswith("/") and ".so" in p.rsplit("/", 1)[-1]))


def _build_id(base: Path, exe: str) -> str:
    if not exe:
        return ""
    # /proc/PID/exe opens the file the process runs even when the path was replaced;
    # while the path is that very file, its name is read instead, as every process of
    # the program was (binaries caches by name: a busy host starts hundreds a window).
    try:
        same = os.path.samestat(os.stat(base / "exe"), os.stat(exe))
    except OSError:
        same = False
    return build_id_of(exe) if same else build_id_of(str(base / "exe")) or build_id_of(exe)


def _cgroup(text: str) -> str:
    """The cgroup v2 path ("0::/system.slice/x.service"), else the first v1 one."""
    paths = [line.split(":", 2)[2] for line in text.splitlines() if line.count(":") >= 2]
    unified = [line.split(":", 2)[2] for line in text.splitlines() if line.startswith("0::")]
    return (unified or paths or [""])[0]


class ProcessTable:
    """pid -> Process for every pid seen recently, including those that exited."""

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self.proc = proc
        self.known: dict[int, Process] = {}
        self.gone: dict[int, int] = {}  # pid -> windows since it exited

    def scan(self) -> None:
        """Read the pids that appeared since the last scan; mark the ones that left."""
        live = self._live_pids()
        for pid in live - self.known.keys():
            self._learn(pid)
        for pid in self.known.keys() - live:
            self.gone.setdefault(pid, 0)
        for pid in live & self.gone.keys():
            # the pid came back: a new process with a reused pid
            del self.gone[pid]
            self._learn(pid)

    def _learn(self, pid: int) -> None:
        info = read_process(pid, self.proc)
        if info is not None:
            self.known[pid] = info

    def _live_pids(self) -> set[int]:
        try:
            return {int(n) for n in os.listdir(self.proc) if n.isdigit()}
        except OSError:
            return set()

    def describe(self, pids: Iterable[int]) -> dict[int, Process]:
        """What is known of these pids (those never seen alive are left out)."""
        return {pid: self.known[pid] for pid in pids if pid in self.known}

    def end_window(self) -> None:
        """Age exited pids; forget those gone for KEEP_WINDOWS windows (bounded memory)."""
        for pid in list(self.gone):
            self.gone[pid] += 1
            if self.gone[pid] > KEEP_WINDOWS:
                del self.gone[pid]
                self.known.pop(pid, None)
