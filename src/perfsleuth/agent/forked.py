"""Run one piece of work in a forked child and get its result back.

Reading a DWARF perf.data loads the unwind data (and today a copy of .text) of
every DSO the samples went through: hundreds of MB on a host running LLVM or a
browser, freed afterwards but kept by the allocator. Doing each window in a
short-lived child keeps the agent's resident memory at its own few tens of MB;
the child starts from the agent's memory (copy on write), caches included.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class ChildFailed(Exception):
    """The child died without an answer (killed, out of memory)."""


def run_forked(work: Callable[[], T]) -> T:
    """work() in a child; its exception, if it raised one, is raised here."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into the parent's code, whatever happens
        status = 1
        try:
            os.close(read_end)
            _answer(work, write_end)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    try:
        ok, value = pickle.loads(data)
    except Exception as e:  # nothing, or a cut answer
        code = os.waitstatus_to_exitcode(status)
        raise ChildFailed(f"the window's converter exited with status {code}") from e
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[no-any-return]


def _answer(work: Callable[[], object], fd: int) -> None:
    try:
        answer: tuple[bool, object] = (True, work())
    except Exception as e:  # handed to the parent, which decides
        answer = (False, e)
    with os.fdopen(fd, "wb") as out:
        pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
