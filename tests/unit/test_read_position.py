"""import's progress: the bytes read of the file, by whichever process reads it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from recorded_progress import Recorded

from perfsleuth.formats.read_position import bytes_read, watched

SIZE = 1 << 20


def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "perf.data"
    path.write_bytes(b"x" * SIZE)
    return path


def test_the_position_of_this_process_reading_the_file(tmp_path):
    path = data_file(tmp_path)
    assert bytes_read(path) == 0  # nobody has it open
    with path.open("rb", buffering=0) as fh:
        fh.read(4096)
        assert bytes_read(path) == 4096


def test_the_position_of_a_child_reading_it(tmp_path):
    path = data_file(tmp_path)
    reader = "import sys; f = open(sys.argv[1], 'rb', buffering=0); f.read(12345); input()"
    child = subprocess.Popen(
        [sys.executable, "-c", reader, str(path)], stdin=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while bytes_read(path) != 12345 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert bytes_read(path) == 12345
    finally:
        child.communicate("\n")


def test_progress_advances_to_the_bytes_read(tmp_path):
    path = data_file(tmp_path)
    progress = Recorded()
    with path.open("rb", buffering=0) as fh, watched(path, progress):
        fh.read(SIZE // 2)
        deadline = time.monotonic() + 30
        while progress.done < SIZE // 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert progress.done == SIZE // 2
