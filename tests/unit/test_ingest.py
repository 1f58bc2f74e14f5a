"""formats/wire/ingest.py: what every pushed window is checked against before it is stored."""

from __future__ import annotations

import gzip

import pytest

from perfsleuth.formats.wire import ingest, pyroscope
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError

QUERY = {"name": "shop.cpu{env=prod}", "from": "1700000000", "until": "1700000010"}


def folded(body: bytes, **query: str):
    params = IngestParams.parse({**QUERY, **query}, "w1")
    return [ingest.check_window(w) for w in pyroscope.decode(body, params, "text/plain")]


@pytest.mark.parametrize(
    ("body", "query", "message"),
    [
        (b"a;b 9007199254740991\n", {}, r"CPU time is 9\.01e\+22 ns .* at most 2\*\*53 ns"),
        (b"a;b 1\n", {"sampleRate": "1e-300"}, r"CPU time is inf ns .* at most 2\*\*53"),
        (b"a;b 1\n", {"name": "x{pid=12345678901234567890}"}, "not a process id"),
        (b"a;b 1\n", {"name": "x{pid=abc}"}, "not a process id"),
        (b"a;b 1\n", {"name": "x{pid=-1}"}, r"\(0 to 4294967295\)"),
        ("a;b ²\n".encode(), {}, "folded line 1: the count '²' is not a whole number"),
    ],
)
def test_a_window_the_store_cannot_keep_is_refused_with_the_limit(
    body: bytes, query: dict, message: str
) -> None:
    with pytest.raises(PayloadError, match=message):
        folded(body, **query)


def test_a_window_at_the_limits_passes() -> None:
    (window,) = folded(b"a;b 900719925\n", name="x{pid=4294967295}", sampleRate="100")
    assert window.profile.num_samples == 900719925 and window.labels["pid"] == "4294967295"


def test_json_nested_too_deeply_is_a_payload_error() -> None:
    with pytest.raises(PayloadError, match="nested too deeply"):
        ingest.json_document(b"[" * 100_000, "agent status")


def test_a_push_budget_is_shared_by_its_profiles() -> None:
    """Two gzip members of 600 KB each against a 1 MB budget: the second is refused."""
    budget = ingest.PushBudget(1 << 20)
    member = gzip.compress(b"\0" * 600_000)
    assert len(budget.gunzip(member)) == 600_000
    with pytest.raises(PayloadError, match="limit of 1 MB"):
        budget.gunzip(member)
    with pytest.raises(PayloadError, match="more than 2,097,152 frames"):
        budget.spend(ingest.MAX_PUSH_FRAMES + 1)
