"""The rules loader: shipped rules load, user files extend them, mistakes name file:line:field."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.rules import load_file, load_rules

GOOD = """
[[rule]]
id = "custom.lz4"
kind = "library-replacement"
title = "{share} of CPU time is in lz4"
dsos = ['^liblz4\\.so']
replacement = "zstd --fast"
apply = "link zstd"
code_change = true
saving = 0.2
saving_range = [0.1, 0.3]
source = "our own benchmark"
confidence = 0.6
"""


def test_shipped_rules_load_and_cover_every_family() -> None:
    ids = {rule.id for rule in load_rules()}
    for family in (
        "allocator.glibc",
        "compression.zlib",
        "json.parser",
        "regex.std",
        "unicode.icu-case",
        "container.vector-bool",
        "exceptions.control-flow",
        "container.node-map",
        "sort.qsort",
        "formatting.printf",
        "formatting.iostream",
        "locking.mutex-on-cpu",
    ):
        assert family in ids


def test_every_shipped_rule_saves_at_most_its_share() -> None:
    for rule in load_rules():
        low, high = rule.saving_range
        assert 0 < low <= rule.saving <= high <= 1, rule.id
        assert rule.source


def test_user_rules_add_and_replace_by_id(tmp_path: Path) -> None:
    extra = tmp_path / "rules.toml"
    extra.write_text(GOOD + GOOD.replace("custom.lz4", "allocator.glibc"))
    rules = {rule.id: rule for rule in load_rules([extra])}
    assert rules["custom.lz4"].matches("LZ4_compress_fast", "liblz4.so.1")
    assert rules["allocator.glibc"].replacement == "zstd --fast"


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD + "\n[[rule]\nid = 3\n")
    with pytest.raises(UserError, match=r"bad\.toml.*line 15"):
        load_file(bad)


def test_unknown_field_names_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "typo.toml"
    bad.write_text(GOOD.replace("confidence = 0.6", "confidense = 0.6"))
    with pytest.raises(UserError, match=r"typo\.toml:13: rule #1, field 'confidense': unknown"):
        load_file(bad)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("saving = 0.2", "saving = 1.5", "saving"),
        ("dsos = ['^liblz4\\.so']", "dsos = ['(unclosed']", "dsos"),
        ('kind = "library-replacement"', 'kind = "speed"', "kind"),
        ("code_change = true", 'code_change = "yes"', "code_change"),
    ],
)
def test_bad_values_name_the_field(tmp_path: Path, old: str, new: str, field: str) -> None:
    bad = tmp_path / "values.toml"
    text = GOOD.replace(old, new)
    assert text != GOOD
    bad.write_text(text)
    with pytest.raises(UserError, match=rf"values\.toml:\d+: rule #1, field '{field}'"):
        load_file(bad)


def test_missing_required_field_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "missing.toml"
    bad.write_text(GOOD.replace('source = "our own benchmark"\n', ""))
    with pytest.raises(
        UserError, match=r"missing\.toml:2: rule #1: missing required field 'source'"
    ):
        load_file(bad)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read the rules file"):
        load_file(tmp_path / "nope.toml")
