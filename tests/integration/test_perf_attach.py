"""perf -p attached to a process that is gone (record --pid of one that exited while
bpftrace started, in all mode), with the real perf."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.collect import perf
from perfsleuth.errors import UserError

pytestmark = pytest.mark.integration


def test_a_target_gone_before_perf_attached_is_said_so(tmp_path: Path) -> None:
    """It said "perf record -p did not start; if it says 'Permission denied', run as
    root", as root, for a `sleep 1` given to --mode all --pid."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    with pytest.raises(UserError, match=rf"process {gone.pid} ended before perf could attach"):
        perf.start_attached(gone.pid, tmp_path / "perf.data", 99, "fp")
