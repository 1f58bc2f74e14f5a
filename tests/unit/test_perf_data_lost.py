"""The samples perf lost, as the native reader counts them (native/src/reader.rs), on a
real perf.data whose buffer filled: `perf record -m 1 -F 999 -g -e cpu-clock --
examples/bin/hotspots 1500000`, perf stopped (SIGSTOP) for its first 0.3 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.formats import perf_data

LOST = Path(__file__).parent.parent / "fixtures" / "lost.perf.data"


def test_each_lost_sample_is_counted_once() -> None:
    """The kernel says it lost samples twice: a PERF_RECORD_LOST once the buffer has room
    again, and its per-event count, which perf record writes at its end as
    PERF_RECORD_LOST_SAMPLES. Both were added: 16,034 lost where `perf report --stats`
    says 8,017 (an nginx worker's, in all mode). Here it says 219 samples, 104 lost."""
    if not perf_data.native_available():
        pytest.skip("the native reader is not built")
    meta = perf_data.read(LOST, use_native=True).meta
    # 208: a native extension built before the fix (`make native` rebuilds it)
    assert (meta["num_samples"], meta["lost_samples"]) == (219, 104), "rebuild: make native"
