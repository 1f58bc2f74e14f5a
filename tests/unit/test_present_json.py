"""present/json.py: orjson writes the document json.dump(indent=1, default=str) wrote;
a small one is written in Python, byte for byte as orjson writes it."""

from __future__ import annotations

import datetime
import enum
import json
import math
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from perfsleuth.present import write
from perfsleuth.present.json import Unwritten, encode, written


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


def orjson_wrote(doc: object) -> bytes:
    options = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    return orjson.dumps(doc, option=options)


def test_a_small_document_is_written_as_orjson_writes_it() -> None:
    floats = [0.0, -0.0, 0.1, 1e-4, 1e-05, -2.5e-05, 3.25e-06, 1e-09, 1.5e-10, 1e15, 1e16, 5e-324]
    doc = {
        "floats": floats + [x * 1.234567 for x in floats],
        "keys": {7: "int", "s": "str", "": None},
        "text": 'Größe \u2264 \U0001f600 "quoted" \\ / \n\t\x00\x1f\x7f \u2028',
        "nested": [[], {}, [[1, [True, False]], {"a": {"b": []}}], (2, 3)],
        "ints": [0, -1, 2**63 - 1, -(2**63), 2**64 - 1],
        "nan": [math.nan, math.inf, -math.inf],
    }
    assert encode(doc) == orjson_wrote(doc)
    for scalar in (1, "x", None, 2.5, []):
        assert encode(scalar) == orjson_wrote(scalar)


def test_rows_of_scalars_are_written_as_orjson_writes_them() -> None:
    """A dict of scalars is written in one piece (`diff`'s rows): every scalar type, a
    float of each exponent orjson writes its own way, keys that are integers, and rows
    beside ones holding a list or a dict, which are written value by value."""
    shares = [0.25, -1e-05, 3.5e-06, 2e-09, 1.5e-10, 1e16, -0.0, math.nan, math.inf]
    rows = [
        {"file": f"a{n}.c", "line": n, "share": share, "source": None, "hot": n % 2 == 0}
        for n, share in enumerate(shares)
    ]
    rows += [{7: "seven", "text": 'Größe "q" \\ \n'}, {"nested": [1]}, {"inner": {"x": 1}}]
    doc = {"lines": rows, "tail": {"total": 2**64 - 1, "delta": -(2**63)}}
    assert encode(doc) == orjson_wrote(doc)
    with pytest.raises(Unwritten):
        written({"rows": [{"count": 2**64}]}, 30)


@pytest.mark.parametrize(
    "doc",
    [
        [{"file": "a.c", "line": n} for n in range(20)],  # 20 rows of 2: 40 values past 30
        {"mode": Mode.COUNT},
        {True: 1},
        {"site": Site("a.c", 7)},
        {"count": 2**64},
    ],
)
def test_a_larger_document_or_another_type_is_left_to_orjson(doc: object) -> None:
    with pytest.raises(Unwritten):
        written(doc, 30)
