"""Pyroscope /ingest: query parameters, folded bodies, multipart pprof bodies."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.formats import pyroscope
from perfsleuth.formats.ingest import IngestParams, PayloadError, parse_name

GO_PROFILE = Path(__file__).resolve().parents[1] / "fixtures" / "go-cpu.pb.gz"
QUERY = {"name": "shop.cpu{env=prod, region=eu}", "from": "1700000000", "until": "1700000010"}


def test_name_gives_service_and_user_labels() -> None:
    assert parse_name("my.awesome.app.cpu{env=staging,region=us-west-1}") == {
        "env": "staging",
        "region": "us-west-1",
        "service": "my.awesome.app",
    }
    assert parse_name("{host=h1}") == {"host": "h1"}
    for bad in ("app{env}", "app{a=b}{c=d}", "app{bad key=1}"):
        with pytest.raises(PayloadError):
            parse_name(bad)


def test_params_defaults_and_checks() -> None:
    p = IngestParams.parse(QUERY, "w1")
    assert (p.start, p.end, p.sample_rate, p.format) == (1.7e9, 1.70000001e9, 100.0, "folded")
    assert p.labels == {"env": "prod", "region": "eu", "service": "shop"}
    for key, value, message in [
        ("from", "1700000000000", "not a time"),
        ("until", "1600000000", "before"),
        ("sampleRate", "0", "above 0"),
        ("sampleRate", "inf", "finite"),
    ]:
        with pytest.raises(PayloadError, match=message):
            IngestParams.parse({**QUERY, key: value}, "w1")


def test_folded_stacks_root_first_with_counts() -> None:
    params = IngestParams.parse({**QUERY, "sampleRate": "19"}, "w1")
    [window] = pyroscope.decode(b"main;a;b 10\n\nmain;c 5\r\n", params, "text/plain")
    p = window.profile
    stacks = {tuple(p.frames[f].function for f in s): c for s, _, c, _, _ in p.rows()}
    assert stacks == {("b", "a", "main"): 10, ("c", "main"): 5}
    assert window.rate_hz == 19.0 and window.labels["service"] == "shop"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"main;a\n", "line 1"),
        (b"main 1\nmain;a 1.5\n", "line 2"),
        (b"main;a 99999999999999999\n", "line 1"),
        (b"ma\x01in 1\n", "control characters"),
        (b"\xc3\x28 1\n", "not UTF-8"),
    ],
)
def test_bad_folded_lines_are_named(body: bytes, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        pyroscope.decode(body, IngestParams.parse(QUERY, "w1"), "text/plain")


def test_pprof_raw_or_in_a_multipart_profile_part() -> None:
    params = IngestParams.parse({**QUERY, "format": "pprof"}, "w1")
    [raw] = pyroscope.decode(GO_PROFILE.read_bytes(), params, "application/octet-stream")
    form = (
        b'--B\r\nContent-Disposition: form-data; name="profile"; filename="p.pprof"\r\n\r\n'
        + GO_PROFILE.read_bytes()
        + b"\r\n--B--\r\n"
    )
    [multipart] = pyroscope.decode(form, params, "multipart/form-data; boundary=B")
    assert multipart.profile.total == raw.profile.total > 0
    with pytest.raises(PayloadError, match="profile"):
        pyroscope.decode(b"--B\r\n\r\nx\r\n--B--\r\n", params, "multipart/form-data; boundary=B")
    with pytest.raises(PayloadError, match="not supported"):
        pyroscope.decode(b"", IngestParams.parse({**QUERY, "format": "jfr"}, "w1"), "")
