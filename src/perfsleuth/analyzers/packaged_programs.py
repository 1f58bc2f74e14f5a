"""The threads of programs that are a package's files, and the note a code change in
such a program's own code gets.

A thread's program is found by its name among the run's binaries, else on PATH
(`clang++-16` runs /usr/lib/llvm-16/bin/clang; the name is the one it was started by).
`od -An -tx1` spends half its time in glibc's printf, called from od's own stripped code:
"format numbers without a format string" is a change to od, not to anything its user
wrote. What its user can change is how the program is used (options, input, a script it
runs: sqlite3's one transaction around many inserts) or which program does the job.
"""

from __future__ import annotations

import os
import re
import shutil

from ..binaries.packaged import is_packaged
from ..model.findings import Finding
from . import Context

SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")
COMM_LENGTH = 15  # a thread's name: the first 15 bytes of its program's file name
NAMED = 0.1  # a program with this part of the run's time is named in the note


def packaged_threads(ctx: Context) -> set[int]:
    """The profile's threads whose program is a package's file."""
    programs: dict[str, str] = {}
    for binary in ctx.binaries:
        path = binary.get("path", "")
        if path.startswith("/") and not SHARED_OBJECT.search(path):
            programs.setdefault(os.path.basename(path)[:COMM_LENGTH], path)
    threads = ctx.profile.threads
    names = {thread.name[:COMM_LENGTH] for thread in threads} - {""}  # each looked up once
    packaged = {n for n in names if is_packaged(programs.get(n) or shutil.which(n) or "")}
    return {index for index, thread in enumerate(threads) if thread.name[:COMM_LENGTH] in packaged}


def packaged_run(ctx: Context) -> list[str]:
    """The names of the packaged programs that hold the run's time (each NAMED of it or
    more, heaviest first; a shell that only started the program is left out); [] when any
    time is in a thread of another program (or of none)."""
    weights: dict[int, float] = {}
    for _stack, weight, _count, thread, _state in ctx.profile.columns():
        weights[thread] = weights.get(thread, 0.0) + weight
    timed = {t for t, w in weights.items() if w > 0}
    if not timed or not timed <= packaged_threads(ctx):
        return []
    by_name: dict[str, float] = {}
    for t in timed:
        name = ctx.profile.threads[t].name
        by_name[name] = by_name.get(name, 0.0) + weights[t]
    total = sum(by_name.values())
    heaviest = sorted(by_name, key=lambda n: -by_name[n])
    return [n for n in heaviest if by_name[n] >= NAMED * total] or heaviest[:1]


def note_packaged_code(finding: Finding, programs: list[str]) -> None:
    """A code change whose call no code of the user's makes: said to be the package's."""
    named = ", ".join(programs[:3])
    whose = f"{named}'s own code (a packaged program)"
    if len(programs) > 1:
        whose = f"the own code of packaged programs ({named})"
    finding.evidence.append(
        f"no caller of this is code of yours with source: it is {whose}; what you can change "
        "is how it is used (its options, its input, a script it runs) or which program does "
        "the job, and the code change below is the package's"
    )
    finding.suggestion = (
        f"This is {whose}: change how it is used or use another program for the job. In "
        f"its code: {finding.suggestion}"
    )
    finding.details["packaged_program"] = programs
