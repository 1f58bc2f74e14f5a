"""collector.cardinality: label values bounded across pushes, not only within one."""

from __future__ import annotations

import pytest

from perfsleuth.collector.cardinality import Cardinality
from perfsleuth.formats.wire.ingest import PayloadError


def test_a_label_past_its_distinct_values_is_refused_and_known_values_still_pass() -> None:
    limit = Cardinality(max_values=2)
    limit.admit({"host": "h1", "service": "api", "version": "1"})
    limit.admit({"host": "h2", "service": "api", "version": "2"})
    with pytest.raises(PayloadError, match=r"label 'version' already has 2 distinct values"):
        limit.admit({"host": "h3", "service": "api", "version": "3"})
    assert limit.values["version"] == {"1", "2"}  # the refused push left nothing
    limit.admit({"host": "h4", "service": "api", "version": "1"})  # host is not limited


def test_too_many_label_names_across_pushes_are_refused() -> None:
    limit = Cardinality(max_names=3)
    limit.admit({"service": "api", "a": "x"})
    with pytest.raises(PayloadError, match=r"at most 3 \(--max-label-names\)"):
        limit.admit({"service": "api", "b": "x", "c": "y"})
    limit.admit({"service": "web", "b": "x"})
    assert sorted(limit.values) == ["a", "b", "service"]
