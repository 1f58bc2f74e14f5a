"""present/json.py: orjson writes the document json.dump(indent=1, default=str) wrote."""

from __future__ import annotations

import datetime
import enum
import json
import math
from dataclasses import dataclass
from pathlib import Path

from perfsleuth.present import write
from perfsleuth.present.json import encode


@dataclass
class Site:
    file: str
    line: int


class Mode(enum.StrEnum):
    COUNT = "count"


def as_json_wrote(doc: object) -> object:
    return json.loads(json.dumps(doc, indent=1, default=str))


def test_the_same_document_as_json_with_default_str() -> None:
    doc = {
        "run": "3",
        "keys": {7: "int", 2.5: "float", True: "bool", None: "none", "s": "str"},
        "path": Path("/src/sqlite3.c"),
        "site": Site("a.c", 7),
        "when": datetime.datetime(2026, 12, 5, 17, 0, tzinfo=datetime.UTC),
        "mode": Mode.COUNT,
        "set": {3},
        "rows": [(1, 0.1, -2e-07, 1e16), [], {}],
        "text": 'Größe \u2264 \U0001f600 "quoted" \\ \n\t\x00',
        "big": 2**63 - 1,
    }
    assert json.loads(encode(doc)) == as_json_wrote(doc)


def test_indented_and_one_line_per_value() -> None:
    text = encode({"a": [1, 2], "b": {"c": None}}).decode()
    assert text.endswith("}\n")
    assert text.splitlines() == [
        "{",
        '  "a": [',
        "    1,",
        "    2",
        "  ],",
        '  "b": {',
        '    "c": null',
        "  }",
        "}",
    ]


def test_what_orjson_refuses_is_written_by_json() -> None:
    deep: list[object] = []
    for _ in range(400):
        deep = [deep]
    undecodable = b"/src/\xff.c".decode(errors="surrogateescape")
    for doc in ({"count": 2**64 + 1}, {"deep": deep}, {"file": undecodable}):
        assert json.loads(encode(doc)) == as_json_wrote(doc)


def test_not_a_number_is_null() -> None:
    assert json.loads(encode({"x": math.nan, "y": math.inf})) == {"x": None, "y": None}


def test_written_through_the_registry(tmp_path: Path) -> None:
    doc = {"a": "1", "b": "2", "functions": [{"name": "f\u00e9", "delta": -3}]}
    out = tmp_path / "diff.json"
    write("diff", doc, "json", str(out))
    assert json.loads(out.read_text(encoding="utf-8")) == doc
