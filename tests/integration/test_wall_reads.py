"""Wall mode on a thread reading a non-blocking pipe: wallsnap's NONBLOCKING mark.

A read that cannot wait is the read's work (copying), as offcpu and all modes' kernel
stacks say of a reader on the CPU; memcached's workers, which read their non-blocking
sockets after each epoll_wait, read `io` 5-10 points over a clock around epoll_wait.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.model.states import NOT_WAITING_READ
from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration

VENV_BIN = Path(sys.executable).parent
# a writer thread fills a pipe; the main thread reads its non-blocking end in a loop and
# never blocks (an empty pipe is EAGAIN at once)
READER = """
import fcntl, os, threading
r, w = os.pipe()
fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_NONBLOCK)
chunk = b"x" * 65536
def write():
    for _ in range(60000):
        os.write(w, chunk)
    os.close(w)
threading.Thread(target=write).start()
while True:
    try:
        if not os.read(r, 1 << 20):
            break
    except BlockingIOError:
        pass
"""


def test_a_thread_reading_a_non_blocking_pipe_is_running_not_waiting_for_io(tmp_path: Path):
    script = tmp_path / "reader.py"
    script.write_text(READER)
    argv = [str(VENV_BIN / "perfsleuth"), "record", "--mode", "wall", "--freq", "100", "--"]
    proc = subprocess.run(
        [*argv, sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    threads = subprocess.run(
        [str(VENV_BIN / "perfsleuth"), "threads", "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    reader = next(t for t in json.loads(threads)["threads"] if t["tid"] == t["pid"])
    assert reader["states"].get("io", 0) < 0.1, reader
    store = Store(tmp_path / ".perfsleuth")
    profile = store.load(store.resolve("latest"))
    marked = [
        state
        for stack, _weight, _count, _t, state in profile.rows()
        if stack and profile.frames[stack[0]].function == NOT_WAITING_READ
    ]
    assert marked and set(marked) == {"running"}, marked
