"""The native folded reader (native/src/folded.rs) against the Python one
(pyroscope._read_folded): the same profile where it takes a text, and the text left
to the Python reader (which says what is wrong) where it would not read it the same."""

from __future__ import annotations

from pathlib import Path

import perfsleuth_native
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfsleuth.formats.wire import pyroscope, window_pprof
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError
from perfsleuth.model.profile import Profile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXTS = {
    "perf-folded": (FIXTURES / "hot.folded").read_bytes(),
    "fleet-window": (FIXTURES / "fleet_head" / "fleet-sim-window.folded").read_bytes(),
}
QUERY = {"name": "app.cpu{env=prod}", "from": "1700000000", "until": "1700000010"}


def _native(body: bytes, per_sample: bool) -> Profile | None:
    params = IngestParams.parse({**QUERY, "format": "lines" if per_sample else "folded"}, "w")
    profile = pyroscope.decode(body, params, "")[0].profile
    read = perfsleuth_native.decode_folded(body, per_sample, window_pprof.named_frame)
    return None if read is None else profile


def _python(body: bytes, per_sample: bool) -> Profile:
    rows = window_pprof.Rows("samples", {"format": "folded", "spy": ""})
    return pyroscope._read_folded(body, per_sample, rows)


def _lines(body: bytes) -> bytes:
    """The folded text as Pyroscope's `lines`: each line its count of times."""
    out = []
    for line in body.decode().splitlines():
        stack, _, count = line.rpartition(" ")
        out += [stack] * min(int(count), 3)
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.parametrize("per_sample", [False, True], ids=["folded", "lines"])
def test_the_native_reader_reads_a_text_as_the_python_one(name: str, per_sample: bool) -> None:
    body = _lines(TEXTS[name]) if per_sample else TEXTS[name]
    native = _native(body, per_sample)
    assert native is not None
    assert native == _python(body, per_sample)
    assert len(native.frames) > 3 and native.num_samples > 3


@pytest.mark.parametrize(
    "text",
    [
        b"a;b 3\r\nc 1\r\n",  # a line break other than \n
        b"a;b\t3\n",  # a tab
        b"a;b 3\nc;\xc2\xa0 2\n",  # Unicode white space
        b"a;b three\n",  # a bad count
        b"a;b 99999999999999999\n",  # too many digits
        b"a;b 9007199254740993\n",  # past 2**53
        b"justonename\n",  # no count
        b"\xff;b 3\n",  # not UTF-8
        b"a;" + b"x" * 16385 + b" 1\n",  # a name too long
        b";".join([b"f"] * 4097) + b" 1\n",  # too deep
    ],
)
def test_a_text_the_python_reader_would_refuse_or_read_otherwise_is_left_to_it(
    text: bytes,
) -> None:
    assert perfsleuth_native.decode_folded(text, False, window_pprof.named_frame) is None
    try:
        expected: Profile | str = _python(text, False)
    except PayloadError as e:
        expected = str(e)
    params = IngestParams.parse({**QUERY, "format": "folded"}, "w")
    try:
        got: Profile | str = pyroscope.decode(text, params, "")[0].profile
    except PayloadError as e:
        got = str(e)
    if isinstance(got, Profile):
        got.meta.pop("spy", None)
        assert isinstance(expected, Profile)
        expected.meta.pop("spy", None)
    assert got == expected


def test_blank_lines_and_trailing_spaces_are_read_as_the_python_reader_reads_them() -> None:
    body = b"\n  \na;b 2  \na;b 3\n;x 1\nb;a;; 4\n\n"
    native = _native(body, False)
    assert native is not None
    assert native == _python(body, False)
    assert native.num_samples == 10


# Lines made of what folded lines are made of, mostly well formed, and of what the
# readers must tell apart (tabs, \r, Unicode white space, NUL, bad counts).
NAMES = st.sampled_from(["a", "b", "main", "é", "x" * 40] * 4 + ["", " a", "a\xa0", "\t", "\x00"])
COUNTS = st.sampled_from([" 1", " 23", " 0", " 7"] * 4 + ["", " x", " 9007199254740993"])
LINES = st.builds(
    lambda names, count, tail: ";".join(names) + count + tail,
    st.lists(NAMES, min_size=1, max_size=5),
    COUNTS,
    st.sampled_from(["", "", "", " ", "\r"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(LINES, max_size=8), st.sampled_from(["\n", "\n", "\n\n", "\r\n"]), st.booleans())
def test_the_native_reader_never_reads_a_text_otherwise_than_the_python_one(
    lines: list[str], end: str, per_sample: bool
) -> None:
    body = (end.join(lines) + end).encode()
    read = perfsleuth_native.decode_folded(body, per_sample, window_pprof.named_frame)
    if read is None:
        return
    frames, stacks, counts = read
    python = _python(body, per_sample)  # raises if the native reader took a bad text
    assert (frames, stacks, counts) == (python.frames, python.stacks, python.sample_count)
