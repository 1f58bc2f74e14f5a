"""A perf.data cut short while `perfsleuth import` reads it (perf, or a copy, still
rewriting it). The native reader maps the file, and the pages past its new end give
SIGBUS on access, which killed the interpreter with no word; now it is one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfsleuth.formats import perf_data

pytestmark = pytest.mark.integration

PERFSLEUTH = Path(sys.executable).parent / "perfsleuth"


def _mapped(pid: int, path: Path) -> bool:
    try:
        return str(path) in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not perf_data.native_available(), reason="the native reader is not built")
def test_a_perf_data_cut_short_while_imported_is_one_clear_line(
    examples_built: Path, tmp_path: Path
) -> None:
    data = tmp_path / "perf.data"
    record = ["perf", "record", "-q", "-F", "2000", "--call-graph", "dwarf", "-o", str(data)]
    target = [str(examples_built / "prodcons"), "300000"]
    subprocess.run([*record, "--", *target], check=True, capture_output=True)
    assert data.stat().st_size > 20e6  # DWARF stacks: long enough to read for a while
    importer = subprocess.Popen(
        [str(PERFSLEUTH), "import", str(data)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cut = False
    while not cut and importer.poll() is None:
        if _mapped(importer.pid, data):  # the reader is in the records now
            os.truncate(data, data.stat().st_size // 2)
            cut = True
        time.sleep(0.001)
    _out, err = importer.communicate(timeout=600)
    assert cut, "the import ended before the file could be cut"
    assert importer.returncode == 2, (importer.returncode, err)  # SIGBUS was -7
    assert "truncated while it was read" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / ".perfsleuth").exists()  # nothing stored
