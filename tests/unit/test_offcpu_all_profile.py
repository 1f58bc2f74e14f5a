"""--mode all's merged profile when one side recorded nothing."""

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from perfsleuth.collect import offcpu
from perfsleuth.collect.target import ProcessMaps
from perfsleuth.errors import UserError


def test_a_window_with_nothing_on_or_off_the_cpu_is_one_line_naming_the_process(tmp_path):
    """A `sleep` attached with --mode all --pid late in its sleep: no perf sample and no
    new block. The error was perf's, naming its perf.data, a temporary file deleted by
    then ("/tmp/perfsleuth-…/perf.data: no samples in this perf.data; the program ran too
    briefly, re-record")."""
    maps = ProcessMaps(os.getpid())
    empty = tmp_path / "perf.data"
    with pytest.raises(UserError, match="nothing was recorded for process 4242") as e:
        offcpu._all_profile([], maps, None, (empty, 99), {"pid": 4242})  # type: ignore[arg-type]
    assert str(tmp_path) not in str(e.value)


def test_samples_perf_lost_are_kept_in_meta_and_said(tmp_path, capsys):
    """perf lost 88% of a busy nginx worker's samples and nothing said so; the ones kept
    leaned toward its epoll_wait (all mode +2.7 to +6.2 points over its clock).
    lost.perf.data: a real recording whose buffer filled, 219 samples kept, 104 lost."""
    fixture = Path(__file__).parent.parent / "fixtures" / "lost.perf.data"
    capture = SimpleNamespace(ran={}, names={})
    session = SimpleNamespace(capture=capture, why_empty=lambda: "nothing blocked")
    meta: dict = {"pid": 4242}
    offcpu._all_profile([], ProcessMaps(os.getpid()), session, (fixture, 999), meta)  # type: ignore[arg-type]
    assert meta["oncpu_samples_lost"] == 104
    assert "perf lost 104 of its 323 on-CPU samples" in capsys.readouterr().err
