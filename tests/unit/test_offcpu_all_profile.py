"""--mode all's merged profile when one side recorded nothing."""

import os

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
