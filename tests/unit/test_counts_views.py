"""annotate --all, the exact count diff, the count document and the gate's
comparison, on a callgrind.out captured from a real program (tests/fixtures)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from perfsleuth.commands import gate
from perfsleuth.errors import UserError
from perfsleuth.formats import callgrind, count_document
from perfsleuth.views import annotate_all, count_diff

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CALLGRIND_OUT = FIXTURES / "callgrind.out.hot"


@pytest.fixture(scope="module")
def data() -> callgrind.CallgrindData:
    return callgrind.parse(CALLGRIND_OUT)


def rendered(doc: dict, render) -> str:
    out = io.StringIO()
    render(doc, Console(file=out, width=80, no_color=True))
    return out.getvalue()


def test_count_document_round_trips_the_file_exactly(tmp_path: Path) -> None:
    doc = count_document.encode(CALLGRIND_OUT)
    assert count_document.decode_bytes(doc) == CALLGRIND_OUT.read_bytes()
    assert doc["size"] == CALLGRIND_OUT.stat().st_size
    assert count_document.parse(doc).totals == callgrind.parse(CALLGRIND_OUT).totals


def test_function_and_line_counts_add_up_to_the_total(data: callgrind.CallgrindData) -> None:
    total = count_document.total(data)
    assert sum(count_document.function_self(data).values()) == total
    assert sum(count_document.line_self(data).values()) == total


def test_annotate_all_lists_files_in_path_order_with_exact_counts(
    data: callgrind.CallgrindData,
) -> None:
    doc = annotate_all.annotate_all(data, [FIXTURES / "src"], threshold=0.0, context=None)
    files = [entry["file"] for entry in doc["files"]]
    assert files == sorted(files) and doc["files_below_threshold"] == 0
    assert sum(entry["counts"][0] for entry in doc["files"]) == count_document.total(data)
    hot = next(entry for entry in doc["files"] if entry["file"].endswith("hot.c"))
    assert hot["path"] is not None
    counted = {row["line"]: row["counts"][0] for row in hot["lines"] if row["line"]}
    expected = {
        line: n
        for (file, line), n in count_document.line_self(data).items()
        if file == hot["file"] and n
    }
    assert {line: n for line, n in counted.items() if n} == expected


def test_annotate_all_text_has_aligned_margin_and_no_wrapping(
    data: callgrind.CallgrindData,
) -> None:
    doc = annotate_all.annotate_all(data, [FIXTURES / "src"], threshold=0.01, context=2)
    text = rendered({"run": "7", **doc}, annotate_all.render)
    assert text.startswith("run 7: ")
    body = [line for line in text.splitlines() if line[:13].strip().replace(",", "").isdigit()]
    assert body and all(line[13:15] == "  " for line in body)
    assert "-- ..." in text
    assert rendered({"run": "7", **doc}, annotate_all.render) == text


def test_shown_lines_mark_gaps_and_keep_lines_past_the_end() -> None:
    assert annotate_all.shown_lines([2, 20, 99], 30, 1) == [1, 2, 3, None, 19, 20, 21, 99]
    assert annotate_all.shown_lines([3], 4, None) == [1, 2, 3, 4]


def test_count_diff_of_a_run_with_itself_is_empty(data: callgrind.CallgrindData) -> None:
    doc = count_diff.count_diff(data, data)
    assert doc["delta"] == 0 and doc["functions"] == [] and doc["lines"] == []


def test_count_diff_reports_every_change_largest_first() -> None:
    rows = count_diff.changes({"f": 100, "g": 50, "h": 7}, {"f": 90, "g": 80, "k": 1}, 1000)
    assert [key for key, _ in rows] == ["g", "f", "h", "k"]
    assert rows[0][1] == {"a": 50, "b": 80, "delta": 30, "delta_share": 0.03}


def test_gate_compares_totals_against_the_threshold() -> None:
    base = {"run": "1", "event": "Ir", "total": 1000, "build_id": "ab", "functions": {"f": 600}}
    grown = {"total": 1006, "build_id": "ab", "functions": {"f": 606}}
    assert not gate.compare(base, grown, 0.005, 10)["passed"]
    assert gate.compare(base, grown, 0.01, 10)["passed"]
    assert gate.compare(base, grown, 0.01, 10)["changes"] == [
        {"function": "f", "a": 600, "b": 606, "delta": 6}
    ]


def test_gate_reads_percentages() -> None:
    assert gate.parse_percent("0.5%") == pytest.approx(0.005)
    assert gate.parse_percent("2") == pytest.approx(0.02)
    with pytest.raises(UserError):
        gate.parse_percent("-1%")


def test_code_without_line_information_is_listed_per_function(
    data: callgrind.CallgrindData,
) -> None:
    doc = annotate_all.annotate_all(data, [], threshold=0.0, context=None)
    (entry,) = [e for e in doc["files"] if e["file"] == annotate_all.NO_SOURCE]
    names = [row["function"] for row in entry["lines"]]
    assert names == sorted(names) and "(below main) [hot]" in names
    assert sum(row["counts"][0] for row in entry["lines"]) == entry["counts"][0]
    assert "(below main) [hot]" in rendered({"run": "1", **doc}, annotate_all.render)


def lines_data(counts: dict[int, int]) -> callgrind.CallgrindData:
    sites = {("k.c", line): [n] for line, n in counts.items()}
    return callgrind.CallgrindData(
        events=["Ir"], self_costs={("/bin/k", "f"): sites}, totals=[sum(counts.values())]
    )


def test_count_diff_follows_lines_moved_by_an_edit() -> None:
    before = lines_data({10: 5, 11: 7, 12: 9})
    after = lines_data({11: 5, 12: 7, 13: 4})  # a line inserted above; the last one changed
    sources = (
        {"k.c": [""] * 9 + ["{", "x = 1;", "y = x;"]},
        {"k.c": [""] * 9 + ["/* new */", "{", "x = 1;", "y = x + 1;"]},
    )
    doc = count_diff.count_diff(before, after, sources=sources)
    rows = [(r["line_a"], r["line_b"], r["delta"], r["source"]) for r in doc["lines"]]
    assert rows == [(12, None, -9, "y = x;"), (None, 13, 4, "y = x + 1;")]


def test_count_diff_pairs_lines_by_number_without_sources() -> None:
    doc = count_diff.count_diff(lines_data({10: 5, 11: 7}), lines_data({11: 5, 12: 7}))
    assert [(r["line"], r["delta"]) for r in doc["lines"]] == [(12, 7), (10, -5), (11, -2)]


def test_unnamed_code_is_merged_per_object_for_comparisons() -> None:
    data = callgrind.CallgrindData(
        events=["Ir"],
        self_costs={("/bin/k", "0x1250"): {("", 0): [3]}, ("/bin/k", "0x12a0"): {("", 0): [4]}},
        totals=[7],
    )
    assert count_document.function_self(data) == {"0x1250": 3, "0x12a0": 4}
    assert count_document.function_self(data, merge_unnamed=True) == {"[unnamed code in k]": 7}
