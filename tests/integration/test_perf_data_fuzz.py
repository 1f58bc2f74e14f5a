"""Fuzzing the perf.data readers: the native (Rust) reader and the `perf script` one.

A real recording (tests/fixtures/detect.perf.data) with bytes replaced, inserted, cut
or cut short gives a Profile with samples, or a UserError: never a Rust panic (which
PyO3 raises as PanicException), another exception, or a hang. The native reader gets
many inputs; the `perf script` fallback, one perf process each, a few.
PERFSLEUTH_FUZZ_EXAMPLES raises the numbers, as in tests/unit/test_readers_fuzz.py.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from mutations import mutated

from perfsleuth.errors import UserError
from perfsleuth.formats import perf_data

pytestmark = pytest.mark.integration

SEED = (Path(__file__).resolve().parents[1] / "fixtures" / "detect.perf.data").read_bytes()
EXAMPLES = int(os.environ.get("PERFSLEUTH_FUZZ_EXAMPLES", "200"))
# Header fields (sizes, offsets, feature bits) and the first records, where a byte
# changes what the reader believes about the rest of the file.
HOT_SPAN = 1024


def check(blob: bytes, native: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "perf.data"
        path.write_bytes(blob)
        try:
            profile = perf_data.read(path, use_native=native)
        except UserError:
            return
    assert profile.num_samples > 0 and profile.total > 0


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.mark.timeout(600)
@pytest.mark.skipif(not perf_data.native_available(), reason="the native reader is not built")
@fuzz(EXAMPLES)
@given(blob=mutated(SEED, HOT_SPAN))
def test_native_reader_never_panics(blob: bytes) -> None:
    check(blob, native=True)


@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("perf") is None, reason="needs Linux perf")
@fuzz(max(5, EXAMPLES // 20))
@given(blob=mutated(SEED, HOT_SPAN))
def test_perf_script_reader_never_crashes(blob: bytes) -> None:
    check(blob, native=False)
