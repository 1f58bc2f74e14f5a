"""The debuginfod client's input checks: which servers it asks, and that only hex
build-ids ever reach a URL or a file name (tests/integration/test_fleet_debuginfod.py
runs it against a real debuginfod)."""

from __future__ import annotations

import pytest

from perfsleuth.errors import UserError
from perfsleuth.symbols.debuginfod import fetch_debuginfo, server_urls, valid_build_id


def test_servers_come_from_the_option_else_from_debuginfod_urls(monkeypatch) -> None:
    monkeypatch.setenv("DEBUGINFOD_URLS", "https://a.example/ http://b.example:8002")
    assert server_urls() == ["https://a.example", "http://b.example:8002"]
    assert server_urls("http://c.example/") == ["http://c.example"]
    assert server_urls("") == []
    monkeypatch.delenv("DEBUGINFOD_URLS")
    assert server_urls() == []


def test_a_server_that_is_not_an_http_url_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match="'file:///usr/lib/debug': give an http"):
        server_urls("file:///usr/lib/debug")


@pytest.mark.parametrize("bad", ["../../etc/passwd", "5792EE8D", "abc", "5792ee8d/../x", ""])
def test_only_hex_build_ids_are_asked_for(bad: str, tmp_path) -> None:
    assert not valid_build_id(bad)
    fetched = fetch_debuginfo(["http://127.0.0.1:9"], bad, str(tmp_path))
    assert fetched.path is None and fetched.failures == []  # no request was made
    assert list(tmp_path.iterdir()) == []


def test_a_real_build_id_is_valid() -> None:
    assert valid_build_id("5792ee8d670a0ee8270426e02743b36060bb1514")
