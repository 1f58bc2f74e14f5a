"""Fuzzing the readers: any bytes give a Profile with samples, or a UserError.

Never another exception, never a hang. `make test` runs a few seconds per reader;
PERFSLEUTH_FUZZ_EXAMPLES raises the number of inputs, and bench/fuzz_readers.py
--minutes N runs this file repeatedly for N minutes.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutated

from perfsleuth.errors import UserError
from perfsleuth.formats import read_any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = int(os.environ.get("PERFSLEUTH_FUZZ_EXAMPLES", "200"))
SEEDS = {
    "folded": (FIXTURES / "hot.folded").read_bytes()[:3000],
    "perf_script": (FIXTURES / "readers" / "perf-dd-stacks-01.txt").read_bytes()[:3000],
    "callgrind": (FIXTURES / "callgrind.out.hot").read_bytes()[:3000],
    "pprof": gzip.decompress((FIXTURES / "go-cpu.pb.gz").read_bytes())[:3000],
    "py_spy": (FIXTURES / "py_spy" / "stdlib_hot.txt").read_bytes()[:3000],
    "speedscope": (FIXTURES / "speedscope" / "py-spy-0.4.3.json").read_bytes(),
}
READERS = sorted(SEEDS)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


TEXT_PIECES = st.sampled_from(
    [
        "main",
        ";",
        " ",
        "\t",
        "\n",
        "\n\n",
        "1",
        "-1",
        "1e30",
        "9" * 30,
        "0x1f",
        "(",
        ")",
        "+0x10",
        ":",
        "#",
        "`",
        "_[k]",
        "cpu-clock:",
        "1.5:",
        "fn=",
        "events: Ir",
        "summary: 9",
    ]
)
TEXT = st.lists(TEXT_PIECES, max_size=60).map(lambda parts: "".join(parts).encode())


def check(data: bytes, fmt: str | None, gz: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input"
        path.write_bytes(gzip.compress(data) if gz else data)
        try:
            profile, _name = read_any(path, fmt)
        except UserError:
            return
    assert profile.num_samples > 0 and profile.total > 0


@pytest.mark.timeout(600)
@pytest.mark.parametrize("fmt", READERS)
@FUZZ
@given(data=st.data())
def test_mutated_seeds(fmt: str, data: st.DataObject) -> None:
    blob = data.draw(mutated(SEEDS[fmt]))
    check(blob, fmt, gz=fmt == "pprof" and data.draw(st.booleans()))
    check(blob, None)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("fmt", [*READERS, None])
@FUZZ
@given(blob=st.one_of(TEXT, st.binary(max_size=512)))
def test_any_bytes(fmt: str | None, blob: bytes) -> None:
    check(blob, fmt)
