"""`top` as text: the plain lines written off a terminal are the bytes rich writes for the
same table, and rich writes whatever the plain lines cannot lay out as it would."""

from __future__ import annotations

import io

import pytest

from perfsleuth.present import top_text
from perfsleuth.present.output import console_for


def _doc(by: str = "function", rows: list[dict] | None = None, **extra: object) -> dict:
    doc = {"run": "7", "by": by, "samples": 1_166_669, "total": 11_666_690_000.0, "unit": "ns"}
    doc["rows"] = rows if rows is not None else _rows()
    return doc | extra


def _rows() -> list[dict]:
    return [
        {"self": 0.4079, "total": 0.4192, "function": "mix", "dso": "/bin/work", "file": "w.c",
         "line": 16},
        {"self": 0.2792, "total": 0.2862, "function": "msort_with_tmp",
         "dso": "/usr/lib/x86_64-linux-gnu/libc.so.6", "file": "./stdlib/msort.c", "line": 39},
        {"self": 0.0057, "total": 1.0, "function": "operator[]<int>", "dso": "[kernel.kallsyms]",
         "file": "", "line": 0},
        {"self": 0.0, "total": 0.0001, "function": "f", "dso": "a.so", "file": "x.h", "line": 0},
    ]  # fmt: skip


def _one_dso() -> dict:
    return {"self": 1.0, "total": 1.0, "dso": "a"}


def _by_rich(doc: dict) -> str:
    out = io.StringIO()
    top_text.render(doc, console_for(out))
    return out.getvalue()


def _written(doc: dict) -> str:
    out = io.StringIO()
    top_text.write(doc, out)
    return out.getvalue()


PLAIN = {
    "by function": _doc(),
    "by line": _doc("line"),
    "by file": _doc("file", [{"self": 0.5, "total": 0.5, "file": f"src/{'a' * 80}.c"}]),
    "by dso": _doc("dso", [{"self": 0.5, "total": 0.75, "dso": f"/usr/lib/{'b' * 80}.so"}]),
    "exact counts": _doc(exact="Ir", total=123_456_789, unit="Ir"),
    "a title wrapped to the table": _doc("dso", [_one_dso()]),
    "a title wrapped at a wider table": _doc(rows=_rows()[3:]),
    "no rows": _doc(rows=[]),
}
BY_RICH = {
    "a name with spaces to wrap": _doc(rows=[{**_rows()[0], "function": "g " * 90}]),
    "a title word wider than the table": _doc("dso", [_one_dso()], unit="u" * 30),
    "a wide character": _doc(rows=[{**_rows()[0], "function": "函数"}]),
    "a tab": _doc(rows=[{**_rows()[0], "function": "a\tb"}]),
    "markup in the title": _doc(unit="[bold]ns"),
    "an emoji code in the title": _doc(unit=":smile:"),
}


@pytest.mark.parametrize("doc", PLAIN.values(), ids=PLAIN.keys())
def test_plain_lines_are_rich_s_bytes(doc: dict) -> None:
    assert top_text._plain_lines(doc, io.StringIO()) is not None
    assert _written(doc) == _by_rich(doc)


@pytest.mark.parametrize("doc", BY_RICH.values(), ids=BY_RICH.keys())
def test_what_plain_lines_cannot_lay_out_is_left_to_rich(doc: dict) -> None:
    assert top_text._plain_lines(doc, io.StringIO()) is None
    assert _written(doc) == _by_rich(doc)


def test_the_width_comes_from_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _doc()
    monkeypatch.setenv("COLUMNS", "60")
    assert top_text._plain_lines(doc, io.StringIO()) is not None  # folded to 60
    assert _written(doc) == _by_rich(doc)
    monkeypatch.setenv("COLUMNS", "300")
    assert top_text._plain_lines(doc, io.StringIO()) is not None
    assert _written(doc) == _by_rich(doc)


@pytest.mark.parametrize("name", ["FORCE_COLOR", "TTY_COMPATIBLE"])
def test_styled_text_is_left_to_rich(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "1")
    written = _written(_doc())
    assert "\x1b[" in written  # the header in bold
    assert written == _by_rich(_doc())


def test_the_title_wraps_as_rich_wraps_it_at_every_table_width() -> None:
    for length in range(1, 140):
        row = {**_rows()[3], "function": "f" * length}
        for doc in (_doc(rows=[row]), _doc(rows=[row], run="12345", unit="nanoseconds")):
            assert _written(doc) == _by_rich(doc), length
            assert length > 120 or top_text._plain_lines(doc, io.StringIO()) is not None


def test_a_table_wider_than_the_pipe_is_folded_as_rich_folds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lz4's and brotli's `top` in the bench's build folder: the file:line column made
    the table wider than the pipe, and rich (0.05-0.08 CPU-s of import) folded it. The
    plain lines narrow the foldable columns as rich does and cut their cells, at every
    width; a name that rich would wrap at its spaces is still left to rich."""
    lz4 = "/work/wt/fresh-counts/bench/out/lz4/lz4-1.9.4/programs/../lib/lz4hc.c"
    rows = [
        {**row, "file": lz4, "function": name}
        for row, name in zip(
            _rows(),
            ["LZ4HC_compress_generic_noDictCtx.part.0", "LZ4HC_countPattern", "g" * 170, "f"],
            strict=True,
        )
    ]
    for columns in range(40, 220):
        monkeypatch.setenv("COLUMNS", str(columns))
        for doc in (_doc(rows=rows), _doc("line", rows=rows[:2]), _doc(exact="Ir", rows=rows)):
            folded = top_text._plain_lines(doc, io.StringIO())
            assert columns < 70 or folded is not None, columns  # narrower: headers fold
            assert _written(doc) == _by_rich(doc), columns
    spaced = _doc(rows=[{**rows[0], "function": "std::map<int, long>::find(int const&) const"}])
    monkeypatch.setenv("COLUMNS", "70")
    assert top_text._plain_lines(spaced, io.StringIO()) is None
    assert _written(spaced) == _by_rich(spaced)
