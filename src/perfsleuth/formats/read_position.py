"""How far the readers have read an input file, for `import`'s progress: the file
position of every descriptor open on it in this process and its children, from
/proc. Whichever reader reads it (Python, the native extension on its own thread,
`perf script` in a child) moves that position, so none of them has to report.
A reader that maps the file instead of reading it shows no progress until done.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..model.progress import Progress

POLL_S = 0.25


def bytes_read(path: Path) -> int:
    """The furthest position of a descriptor open on path (0: none open)."""
    target = os.path.realpath(path)
    furthest = 0
    for pid in [os.getpid(), *descendants(os.getpid())]:
        for fd_link in descriptors(pid):
            try:
                if os.readlink(fd_link) != target:
                    continue
                info = Path(fd_link.replace("/fd/", "/fdinfo/")).read_text()
            except OSError:  # closed meanwhile
                continue
            furthest = max(furthest, int(info.split(None, 2)[1]))  # "pos:\tN"
    return furthest


def descriptors(pid: int) -> list[str]:
    folder = f"/proc/{pid}/fd"
    try:
        return [f"{folder}/{fd}" for fd in os.listdir(folder)]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *descendants(child)]
    return found


@contextmanager
def watched(path: Path, progress: Progress) -> Iterator[None]:
    """Advance progress (its phase's total: the file's size) by the bytes read of
    path while the block runs."""
    done = threading.Event()

    def poll() -> None:
        shown = 0
        while not done.wait(POLL_S):
            now = bytes_read(path)
            if now > shown:
                progress.advance(now - shown)
                shown = now

    poller = threading.Thread(target=poll, name="perfsleuth-read-position", daemon=True)
    poller.start()
    try:
        yield
    finally:
        done.set()
        poller.join()
