"""LineCounts: what `diff` of two count runs reads of a run, made from its counts."""

from __future__ import annotations

import json

from perfsleuth.formats import callgrind
from perfsleuth.model.counts import Counts
from perfsleuth.model.line_counts import LineCounts

SORT = ("/bin/k", "sort")
SORT_2 = ("/bin/k", "sort'2")
UNNAMED = ("/lib/libc.so.6", "0x1a2b")


def counts() -> Counts:
    cells = {
        (SORT, "k.c", 3, 0): [10, 1],
        (SORT_2, "k.c", 3, 0): [5, 2],
        (SORT_2, "k.c", 4, 0): [7, 0],
        (UNNAMED, "???", 0, 0): [2, 2],
        (SORT, "h.h", 9, 0): [1, 1],
    }
    data = callgrind.CallgrindData(events=["Ir", "Dr"], cells=cells, totals=[25, 6])
    return Counts(b"", {"k.c": ["int x;", "", "sort();"]}, callgrind.exact_counts(data))


def test_functions_are_counted_by_name_with_recursion_merged_or_apart() -> None:
    lines = LineCounts.of(counts())
    assert lines.function_self("Ir") == {"sort": 23, "[unnamed code in libc.so.6]": 2}
    assert lines.function_self("Dr", split_recursion=True) == {
        "sort": 2,
        "sort'2": 2,
        "[unnamed code in libc.so.6]": 2,
    }
    assert lines.total("Dr") == 6 and lines.total("D1mr") == 0 and lines.column("D1mr") == 0


def test_lines_are_summed_per_file_with_the_text_of_sourced_files_only() -> None:
    files = LineCounts.of(counts()).files
    assert sorted(files) == ["???", "h.h", "k.c"]
    assert files["k.c"].lines == [3, 4] and files["k.c"].counts == [[15, 7], [3, 0]]
    assert files["k.c"].texts == ["sort();", None]  # line 4 is past the file's end
    assert files["h.h"].texts is None and files["???"].lines == [0]


def test_line_counts_read_back_from_their_json_as_they_were() -> None:
    lines = LineCounts.of(counts())
    assert LineCounts.from_json(json.loads(json.dumps(lines.to_json()))) == lines
