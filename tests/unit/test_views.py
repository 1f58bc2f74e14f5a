import io
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.formats import callgrind
from perfsleuth.model.counts import Counts, ExactCounts, Sources
from perfsleuth.model.line_counts import FileLines, LineCounts
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.present import annotate_text, diff_text, folded
from perfsleuth.views import annotate, callgraph, count_diff, diff, flame, source, top

MAIN = Frame("main", "prog", "prog.c", 30)
A = Frame("a", "prog", "prog.c", 10)
B = Frame("b", "prog", "prog.c", 20)
WORK_A = Frame("work", "prog", "prog.c", 2)
WORK_B = Frame("work", "prog", "prog.c", 3)
LIBC = Frame("memcpy", "libc.so.6")


def profile():
    b = ProfileBuilder()
    b.add([WORK_A, A, MAIN], 6)
    b.add([WORK_B, B, MAIN], 3)
    b.add([LIBC, B, MAIN], 1)
    return b.build()


def recursive():
    b = ProfileBuilder()
    b.add([A, A, A, MAIN], 4)
    b.add([MAIN], 1)
    return b.build()


def rows_by_name(doc):
    return {r["function"]: r for r in doc["rows"]}


def test_top_self_and_total():
    rows = rows_by_name(top.top(profile()))
    assert rows["work"]["self"] == pytest.approx(0.9)
    assert rows["main"]["self"] == 0
    assert rows["main"]["total"] == pytest.approx(1.0)
    assert rows["b"]["total"] == pytest.approx(0.4)
    assert rows["memcpy"]["dso"] == "libc.so.6"


def test_top_total_counts_recursion_once():
    rows = rows_by_name(top.top(recursive(), sort="total"))
    assert rows["a"]["total"] == pytest.approx(0.8)
    assert rows["a"]["self"] == pytest.approx(0.8)


def test_top_by_line_file_dso():
    lines = top.top(profile(), by="line")["rows"]
    assert (lines[0]["function"], lines[0]["line"], lines[0]["self"]) == ("work", 2, 0.6)
    dsos = {r["dso"]: r for r in top.top(profile(), by="dso")["rows"]}
    assert dsos["libc.so.6"]["self"] == pytest.approx(0.1)
    assert dsos["prog"]["total"] == pytest.approx(1.0)
    files = {r["file"]: r for r in top.top(profile(), by="file")["rows"]}
    assert files["prog.c"]["self"] == pytest.approx(0.9)


def test_top_sort_and_limit():
    doc = top.top(profile(), sort="total", n=2)
    assert [r["function"] for r in doc["rows"]] == ["main", "work"]


def test_callers_and_callees_percentages():
    (entry,) = callgraph.callgraph(profile(), "^work$")
    callers = {r["function"]: r for r in entry["callers"]}
    assert callers["a"]["share"] == pytest.approx(6 / 9)
    assert callers["b"]["total"] == pytest.approx(0.3)
    assert entry["callees"] == [{"function": "[self]", "total": 0.9, "share": 1.0}]
    (b_entry,) = callgraph.callgraph(profile(), "b")
    callees = {r["function"]: r["share"] for r in b_entry["callees"]}
    assert callees == {"work": pytest.approx(0.75), "memcpy": pytest.approx(0.25)}


def test_callgraph_unknown_function_is_a_user_error():
    with pytest.raises(UserError, match="no function matching"):
        callgraph.callgraph(profile(), "nosuchfn")


def test_folded_is_root_first_and_sorted():
    lines = folded.lines(profile())
    assert lines == ["main;a;work 6", "main;b;memcpy 1", "main;b;work 3"]


def test_flame_columns_totals():
    columns = flame.flame_columns(profile())
    totals = columns.values["total"]
    assert totals[0] == 10
    under_main = {
        columns.names[columns.name[i]]: totals[i]
        for i in range(len(columns.name))
        if columns.depth[i] == 2
    }
    assert under_main == {"a": 6, "b": 4}


def test_diff_normalises_each_run():
    a = profile()
    b = ProfileBuilder()
    b.add([WORK_A, A, MAIN], 60)
    b.add([WORK_B, B, MAIN], 40)
    doc = diff.diff(a, b.build())
    rows = {r["function"]: r for r in doc["rows"]}
    assert rows["memcpy"]["delta_self"] == pytest.approx(-0.1)
    assert rows["work"]["delta_self"] == pytest.approx(0.1)
    assert doc["total_b"] == 100


def test_diff_of_runs_in_other_units_gives_no_ratio():
    """A count run (instructions) against a sampled one (ns): both totals, no ratio
    (it said 'instructions/ns (1.928x)')."""
    b = ProfileBuilder(unit="ns")
    b.add([WORK_A, A, MAIN], 60)
    doc = {**diff.diff(profile(), b.build()), "a": 1, "b": 2}
    out = io.StringIO()
    diff_text.write(doc, out)
    assert "not comparable" in out.getvalue() and "×" not in out.getvalue()


def test_annotate_reads_source_lines(tmp_path: Path):
    (tmp_path / "prog.c").write_text("\n".join(f"line {i}" for i in range(1, 40)))
    ((entry,),) = [doc["files"] for doc in source.annotate(profile(), "^work$", [tmp_path])]
    by_line = {r["line"]: r for r in entry["lines"]}
    assert by_line[2]["self"] == pytest.approx(0.6)
    assert by_line[3]["source"] == "line 3"
    assert entry["path"] == str(tmp_path / "prog.c")


def test_annotate_without_source_still_lists_costs():
    ((entry,),) = [doc["files"] for doc in source.annotate(profile(), "^work$", [])]
    assert entry["path"] is None
    assert {r["line"] for r in entry["lines"]} == {2, 3}


def test_diff_matches_functions_across_renamed_binaries():
    b = ProfileBuilder()
    b.add([Frame("work", "prog-O3", "prog.c", 2), Frame("main", "prog-O3")], 10)
    doc = diff.diff(profile(), b.build())
    rows = {r["function"]: r for r in doc["rows"]}
    assert rows["work"]["self_a"] == pytest.approx(0.9)
    assert rows["work"]["self_b"] == pytest.approx(1.0)


# -- count runs: the same views over exact counts (tests/fixtures/callgrind.out.hot) ----

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def data() -> ExactCounts:
    return callgrind.exact_counts(callgrind.parse(FIXTURES / "callgrind.out.hot"))


def written(doc: dict, write) -> str:
    out = io.StringIO()
    write(doc, out)
    return out.getvalue()


def test_annotate_all_lists_files_in_path_order_with_exact_counts(
    data: ExactCounts,
) -> None:
    doc = annotate.annotate_counts(data, [FIXTURES / "src"], threshold=0.0, context=None)
    files = [entry["file"] for entry in doc["files"]]
    assert files == sorted(files) and doc["files_below_threshold"] == 0
    assert sum(entry["counts"][0] for entry in doc["files"]) == data.total()
    hot = next(entry for entry in doc["files"] if entry["file"].endswith("hot.c"))
    assert hot["path"] is not None
    counted = {row["line"]: row["counts"][0] for row in hot["lines"] if row["line"]}
    expected = {
        line: n for (file, line), n in data.line_self().items() if file == hot["file"] and n
    }
    assert {line: n for line, n in counted.items() if n} == expected


def test_annotate_all_text_has_aligned_margin_and_no_wrapping(
    data: ExactCounts,
) -> None:
    doc = annotate.annotate_counts(data, [FIXTURES / "src"], threshold=0.01, context=2)
    text = written({"run": "7", **doc}, annotate_text.write)
    assert text.startswith("run 7: ")
    body = [line for line in text.splitlines() if line[:13].strip().replace(",", "").isdigit()]
    assert body and all(line[13:15] == "  " for line in body)
    assert "-- ..." in text
    assert written({"run": "7", **doc}, annotate_text.write) == text


def test_shown_lines_mark_gaps_and_keep_lines_past_the_end() -> None:
    assert annotate.shown_lines([2, 20, 99], 30, 1) == [1, 2, 3, None, 19, 20, 21, 99]
    assert annotate.shown_lines([3], 4, None) == [1, 2, 3, 4]


def test_code_without_line_information_is_listed_per_function(
    data: ExactCounts,
) -> None:
    doc = annotate.annotate_counts(data, [], threshold=0.0, context=None)
    (entry,) = [e for e in doc["files"] if e["file"] == annotate.NO_SOURCE]
    names = [row["function"] for row in entry["lines"]]
    assert names == sorted(names) and "(below main) [hot]" in names
    assert sum(row["counts"][0] for row in entry["lines"]) == entry["counts"][0]
    assert "(below main) [hot]" in written({"run": "1", **doc}, annotate_text.write)


def line_counts(exact: ExactCounts, sources: Sources | None = None) -> LineCounts:
    return LineCounts.of(Counts(b"", sources or {}, exact))


def test_count_diff_of_a_run_with_itself_is_empty(data: ExactCounts) -> None:
    doc = count_diff.exact_diff(line_counts(data), line_counts(data))
    assert doc["delta"] == 0 and doc["functions"] == [] and doc["lines"] == []


def test_count_diff_reports_every_change_largest_first() -> None:
    rows = count_diff.changes({"f": 100, "g": 50, "h": 7}, {"f": 90, "g": 80, "k": 1}, 1000)
    assert [key for key, _ in rows] == ["g", "f", "h", "k"]
    assert rows[0][1] == {"a": 50, "b": 80, "delta": 30, "delta_share": 0.03}


def lines_data(counts: dict[int, int]) -> ExactCounts:
    cells = {(("/bin/k", "f"), "k.c", line, 0): [n] for line, n in counts.items()}
    data = callgrind.CallgrindData(events=["Ir"], cells=cells, totals=[sum(counts.values())])
    return callgrind.exact_counts(data)


def test_count_diff_follows_lines_moved_by_an_edit() -> None:
    before = lines_data({10: 5, 11: 7, 12: 9})
    after = lines_data({11: 5, 12: 7, 13: 4})  # a line inserted above; the last one changed
    sources = (
        {"k.c": [""] * 9 + ["{", "x = 1;", "y = x;"]},
        {"k.c": [""] * 9 + ["/* new */", "{", "x = 1;", "y = x + 1;"]},
    )
    doc = count_diff.exact_diff(line_counts(before, sources[0]), line_counts(after, sources[1]))
    rows = [(r["line_a"], r["line_b"], r["delta"], r["source"]) for r in doc["lines"]]
    assert rows == [(12, None, -9, "y = x;"), (None, 13, 4, "y = x + 1;")]


# cJSON 1.7.15's ensure() (gcc 12 -O2 -g), counted lines and texts as two count runs kept
# them: as released, then split into its fast path below a new NOINLINE ensure_slow()
ENSURE_BEFORE = [
    (440, 1242684, "{"),
    (444, 1553355, "    if ((p == NULL) || (p->buffer == NULL))"),
    (449, 1553355, "    if ((p->length > 0) && (p->offset >= p->length))"),
    (455, 932013, "    if (needed > INT_MAX)"),
    (461, 621342, "    needed += p->offset + 1;"),
    (462, 621342, "    if (needed <= p->length)"),
    (464, 310638, "        return p->buffer + p->offset;"),
    (467, 99, "    if (p->noalloc) {"),
    (472, 66, "    if (needed > (INT_MAX / 2))"),
    (486, 33, "        newsize = needed * 2;"),
    (489, 99, "    if (p->hooks.reallocate != NULL)"),
    (492, 99, "        newbuffer = (unsigned char*)p->hooks.reallocate(p->buffer, newsize);"),
    (493, 66, "        if (newbuffer == NULL)"),
]
ENSURE_SPLIT = [
    (440, 132, "{"),
    (444, 99, "    if (p->noalloc) {"),
    (449, 66, "    if (needed > (INT_MAX / 2))"),
    (463, 33, "        newsize = needed * 2;"),
    (466, 99, "    if (p->hooks.reallocate != NULL)"),
    (469, 132, "        newbuffer = (unsigned char*)p->hooks.reallocate(p->buffer, newsize);"),
    (470, 66, "        if (newbuffer == NULL)"),
    (503, 1553355, "    if ((p == NULL) || (p->buffer == NULL))"),
    (508, 1553355, "    if ((p->length > 0) && (p->offset >= p->length))"),
    (514, 621342, "    if (needed > INT_MAX)"),
    (520, 621342, "    needed += p->offset + 1;"),
    (521, 621342, "    if (needed <= p->length)"),
    (523, 621276, "        return p->buffer + p->offset;"),
    (526, 33, "    return ensure_slow(p, needed);"),
]


def test_count_diff_follows_a_block_moved_past_other_lines() -> None:
    """The fast path's lines, moved below the new function, were all listed as gone and
    new (16 changed lines): those of one text in each run pair as moved, and only lines
    whose counts changed are listed."""

    def file_lines(rows: list[tuple[int, int, str]]) -> FileLines:
        return FileLines([n for n, _, _ in rows], [[c for _, c, _ in rows]], [t for *_, t in rows])

    a, b = file_lines(ENSURE_BEFORE), file_lines(ENSURE_SPLIT)
    moved = [(a.lines[i], b.lines[j]) for i, j in count_diff.align_file(a, b) if i is not None]
    assert (444, 503) in moved and (461, 520) in moved and (464, 523) in moved
    before = LineCounts(["Ir"], [10**7], [], [[]], [], [[]], {"cJSON.c": a})
    after = LineCounts(["Ir"], [10**7], [], [[]], [], [[]], {"cJSON.c": b})
    rows = count_diff.exact_diff(before, after)["lines"]
    assert [(r["line_a"], r["line_b"], r["delta"]) for r in rows] == [
        (440, 440, -1242552),
        (455, 514, -310671),
        (464, 523, 310638),
        (492, 469, 33),
        (None, 526, 33),
    ]


def test_count_diff_pairs_files_of_a_build_in_another_directory() -> None:
    """The same source built in two checkouts: only the changed line differs, not every
    line of every file (each file only in one run, all its lines gone or new)."""

    def build(root: str, counts: dict[int, int]) -> LineCounts:
        cells = {(("/bin/k", "f"), f"{root}/src/k.c", n, 0): [c] for n, c in counts.items()}
        data = callgrind.CallgrindData(events=["Ir"], cells=cells, totals=[sum(counts.values())])
        return line_counts(callgrind.exact_counts(data))

    doc = count_diff.exact_diff(
        build("/ci/job1", {10: 5, 11: 7}), build("/ci/job2", {10: 5, 11: 9})
    )
    assert doc["files_moved"] == [["/ci/job1/src/k.c", "/ci/job2/src/k.c"]]
    assert [(r["file_a"], r["file"], r["line"], r["delta"]) for r in doc["lines"]] == [
        ("/ci/job1/src/k.c", "/ci/job2/src/k.c", 11, 2)
    ]


def test_files_pair_across_directories_only_when_one_name_fits_best() -> None:
    pairs = count_diff.paired_files(
        ["/a/src/x.c", "/a/lib/util.c", "/a/src/util.c", "/a/y.c", "/a/kept.c"],
        ["/b/src/x.c", "/b/src/util.c", "/b/z.c", "/a/kept.c"],
    )
    assert sorted(pairs, key=str) == sorted(
        [
            ("/a/src/x.c", "/b/src/x.c"),
            ("/a/src/util.c", "/b/src/util.c"),  # src/util.c fits better than lib/util.c
            ("/a/lib/util.c", None),
            ("/a/y.c", None),
            (None, "/b/z.c"),
            ("/a/kept.c", "/a/kept.c"),
        ],
        key=str,
    )
    # two files of A fit one of B equally well: neither is paired
    assert sorted(count_diff.paired_files(["/a/1/u.c", "/a/2/u.c"], ["/b/u.c"]), key=str) == [
        ("/a/1/u.c", None),
        ("/a/2/u.c", None),
        (None, "/b/u.c"),
    ]


def test_count_diff_pairs_lines_by_number_without_sources() -> None:
    doc = count_diff.exact_diff(
        line_counts(lines_data({10: 5, 11: 7})), line_counts(lines_data({11: 5, 12: 7}))
    )
    assert [(r["line"], r["delta"]) for r in doc["lines"]] == [(12, 7), (10, -5), (11, -2)]


def test_count_diff_lists_no_unchanged_blank_or_unknown_line() -> None:
    """mawk's parse.y (its yacc #line lines) has counted blank lines: the same in both
    runs, they were listed as gone and new (`parse.y:1120  3 -> 0` and `0 -> 3`), 8 of
    the diff's 14 changed lines, beside memory.c's 6 real ones."""
    import json

    doc = json.loads((FIXTURES / "count_diff" / "mawk_noinline.json").read_text())
    a, b = LineCounts.from_json(doc["a"]), LineCounts.from_json(doc["b"])
    rows = count_diff.exact_diff(a, b)["lines"]
    assert {r["file"] for r in rows} == {"mawk-1.3.4-20200120/memory.c"}
    assert [(r["line_a"], r["line_b"], r["delta"]) for r in rows][:3] == [
        (None, 73, 2280476),  # xnew_STRING's call in new_STRING1, no longer inlined
        (None, 40, 1353946),  # its entry and exit, now its own
        (None, 46, 1353946),
    ]
    past_end = FileLines([3, 4], [[1, 2]], ["", None])  # a blank line, one past the end
    assert count_diff.align_file(past_end, FileLines([3, 4], [[1, 2]], ["", None])) == 2


def test_count_diff_pairs_the_lines_of_an_unchanged_file_by_number() -> None:
    """mujs's jscompile.c, the same file in both trees, with code the compiler moved
    between its lines when jsrun.c's stackidx was made noinline. Paired by the texts of
    its counted lines, line 778 of run A (`label(J, F, end);`, 35 -> 0) was paired with
    line 757 of run B (0 -> 7) and 777 with 756 (`cexp(J, F, exp->b);`, 28 each), so
    that change was not listed, and line 771 (20 in both) was listed as gone and new.
    A file whose content is the one run A recorded pairs its lines by number, and each
    changed line's counts are callgrind_annotate's of the two runs."""
    import json

    doc = json.loads((FIXTURES / "count_diff" / "mujs_noinline.json").read_text())
    a, b = LineCounts.from_json(doc["a"]), LineCounts.from_json(doc["b"])
    rows = count_diff.exact_diff(a, b)["lines"]
    unchanged = {
        r["line_a"] or r["line_b"]: (r["a"], r["b"])
        for r in rows
        if r["file"].endswith("jscompile.c")
    }
    assert all(
        len({r["line_a"], r["line_b"]} - {None}) == 1
        for r in rows
        if r["file"].endswith("jscompile.c")
    )
    assert {n: unchanged.get(n) for n in (756, 757, 771, 777, 778)} == {
        756: (0, 28),
        757: (0, 7),
        771: None,
        777: (28, 0),
        778: (35, 0),
    }
    edited = [r for r in rows if r["file"].endswith("jsrun.c")]
    assert edited[0]["line_a"] == edited[0]["line_b"] == 200  # stackidx's first line


def test_count_diff_pairs_a_line_whose_indentation_changed() -> None:
    """bc's hot multiply loop given a check before its product, the product's line
    wrapped into a block: it was listed as gone (-379,652,142) and the new check's line
    took its count (+379,652,142), as if nothing had paired."""
    loop = "\twhile ((n1ptr >= n1->n_value) && (n2ptr <= n2end))"
    product = "\tsum += *n1ptr-- * *n2ptr++;"
    check = "\t  if (*n1ptr >= BASE || *n2ptr >= BASE) abort ();"
    a = FileLines([660, 661], [[271025024, 379652142]], [loop, product])
    b = FileLines(
        [660, 662, 663], [[271025024, 379652142, 253101428]], [loop, check, "\t  " + product[1:]]
    )
    assert count_diff.align_file(a, b) == [(0, 0), (1, 2), (None, 1)]
    before = LineCounts(["Ir"], [10**9], [], [[]], [], [[]], {"number.c": a})
    after = LineCounts(["Ir"], [10**9], [], [[]], [], [[]], {"number.c": b})
    rows = count_diff.exact_diff(before, after)["lines"]
    assert [(r["line_a"], r["line_b"], r["delta"]) for r in rows] == [
        (None, 662, 379652142),
        (661, 663, -126550714),
    ]


INLINE_SOURCE = "/tmp/inline/inline.c"  # where tests/fixtures/src/inline.c was recorded


def inline_runs() -> list[LineCounts]:
    """inline.c's two runs: mix inlined into work's loop, then built with -DLOST."""
    source = (FIXTURES / "src" / "inline.c").read_text().splitlines()
    return [
        line_counts(
            callgrind.exact_counts(callgrind.parse(FIXTURES / f"callgrind.out.{name}")),
            {INLINE_SOURCE: source},
        )
        for name in ("inline", "inline-lost")
    ]


def test_count_diff_names_a_function_no_longer_inlined() -> None:
    """A helper made noinline is a new function to the diff (mix 0 -> 129,000), as if
    its code were new: tcc's tok_get made noinline cost +1.55%, listed as a new function,
    and nothing said why. Its lines were counted in run A inside work, where it was
    inlined: the diff says so, either way round, and not of a run against itself."""
    a, b = inline_runs()
    doc = count_diff.exact_diff(a, b)
    assert (doc["functions"][0]["function"], doc["functions"][0]["a"]) == ("mix", 0)
    (row,) = doc["inlining"]
    assert (row["function"], row["inlined_in"], row["file"]) == ("mix", "a", INLINE_SOURCE)
    source = (FIXTURES / "src" / "inline.c").read_text().splitlines()
    start = source.index("static HELPER unsigned mix(unsigned h, unsigned c) {") + 1
    assert start <= row["first"] <= row["last"] <= source.index("}", start) + 1  # mix's body
    counted = dict(zip(a.files[INLINE_SOURCE].lines, a.files[INLINE_SOURCE].counts[0], strict=True))
    on_mix = sum(c for n, c in counted.items() if row["first"] <= n <= row["last"])
    assert row["count"] == on_mix > 0
    (back,) = count_diff.exact_diff(b, a)["inlining"]
    assert (back["function"], back["inlined_in"]) == ("mix", "b")
    assert count_diff.exact_diff(a, a)["inlining"] == []
    out = io.StringIO()
    diff_text.write({**doc, "a": "1", "b": "2"}, out)
    assert "mix is a function of its own in run 2 and was inlined in run 1" in out.getvalue()


def test_a_function_split_in_two_is_not_said_to_be_inlined() -> None:
    """tcc's tok_str_add2 split into a fast path and tok_str_add2_slow: the slow function's
    lines were tok_str_add2's own in run A, not inlined code."""

    def run(function: str) -> LineCounts:  # the function's 3 lines, each counted 3 times
        code = {"k.c": FileLines([10, 11, 12], [[3, 3, 3]], ["{", "x = 1;", "}"])}
        spans = {function: ["k.c", 10, 12]}
        return LineCounts(["Ir"], [9], [function], [[9]], [function], [[9]], code, spans=spans)

    a, b = run("f"), run("f_slow")
    assert count_diff.exact_diff(a, b)["inlining"] == []
    del a.spans["f"]  # the lines in no function of run A's own: inlined there
    assert [row["function"] for row in count_diff.exact_diff(a, b)["inlining"]] == ["f_slow"]


def test_count_diff_pairs_a_file_lines_with_themselves_when_nothing_moved() -> None:
    same = FileLines([3, 4], [[1, 2]], ["a", "b"])
    moved = FileLines([5, 6], [[1, 2]], ["a", "b"])
    assert count_diff.align_file(same, same) == count_diff.align_file(same, moved) == 2
    assert count_diff.align_file(same, FileLines([3, 4], [[1, 2]], None)) == 2
    unknown = FileLines([3, 4], [[1, 2]], ["a", None])  # line 4 is past the file's end
    assert count_diff.align_file(same, unknown) == [(0, 0), (1, None), (None, 1)]
    by_number = count_diff.align_file(FileLines([3, 4], [[1, 2]], None), moved)
    assert by_number == [(0, None), (1, None), (None, 0), (None, 1)]


def test_count_diff_text_is_plain_lines_off_a_terminal_and_bold_where_forced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before, after = line_counts(lines_data({10: 5})), line_counts(lines_data({10: 7}))
    doc = {"a": "1", "b": "2", **count_diff.exact_diff(before, after)}
    plain = io.StringIO()
    diff_text.write(doc, plain)
    lines = plain.getvalue().splitlines()
    assert lines[:3] == ["run 1 → run 2: 5 → 7 Ir (+2, +40.000%)", "", "1 function changed"]
    assert (
        lines[-1].split() == ["5", "7", "+2", "+40.000%", "k.c:10"]
        and "\x1b[" not in plain.getvalue()
    )
    monkeypatch.setenv("FORCE_COLOR", "1")
    forced = io.StringIO()
    diff_text.write(doc, forced)
    assert "\x1b[1m1 line changed\x1b[0m" in forced.getvalue()


def test_a_source_file_keeps_cost_at_no_line_and_past_its_end(tmp_path: Path):
    (tmp_path / "prog.c").write_text("a\nb\n")
    costs = {0: [1.0, 1.0], 2: [2.0, 2.0], 9: [1.0, 1.0]}
    doc = source.source_file("prog.c", costs, 4.0, [tmp_path])
    assert [r["line"] for r in doc["lines"]] == [0, 1, 2, 9]
    assert [r["source"] for r in doc["lines"]] == ["", "a", "b", ""]
    assert doc["self"] == 1.0 and doc["total"] == 0.5


def test_a_thread_filter_naming_no_thread_of_the_run_is_a_user_error():
    """`top --thread TID` with a tid the run does not have printed an empty table, as
    if that thread had done nothing."""
    import argparse

    from perfsleuth.commands.common import apply_filters
    from perfsleuth.model.profile import Thread

    b = ProfileBuilder(unit="ns")
    b.add([WORK_A, A, MAIN], 6, thread=Thread(11, 10, "worker"), state="running")
    run = b.build()
    kept = apply_filters(run, argparse.Namespace(thread=[11], state=None))
    assert kept.total == 6
    with pytest.raises(UserError, match="no thread 999999"):
        apply_filters(run, argparse.Namespace(thread=[999999], state=None))


def test_count_diff_pairs_the_unnamed_code_of_a_program_rebuilt_under_another_name() -> None:
    """libyaml's driver rebuilt as yaml-fast: "3 functions changed", two of them its PLT
    stubs (`[unnamed code in yaml]` 30 -> 0, `[unnamed code in yaml-fast]` 0 -> 30)."""
    names = ["parse", "[unnamed code in yaml]", "[unnamed code in libc.so.6]"]
    before = LineCounts(["Ir"], [1000], names, [[900, 30, 70]], names, [[900, 30, 70]], {})
    renamed = ["parse", "[unnamed code in yaml-fast]", "[unnamed code in libc.so.6]"]
    after = LineCounts(["Ir"], [950], renamed, [[850, 30, 70]], renamed, [[850, 30, 70]], {})
    doc = count_diff.exact_diff(before, after)
    assert [row["function"] for row in doc["functions"]] == ["parse"]
    assert doc["functions_changed"] == 1


def test_the_callers_share_column_is_named_for_the_function_it_divides() -> None:
    """Each caller's share is of FUNC's total (compute_a 50% of work's), not of the
    caller's own total as the heading said."""
    import io

    from rich.console import Console

    from perfsleuth.present.callgraph_text import render_callers

    doc = {
        "run": "1",
        "functions": [
            {
                "function": "work",
                "self": 0.09,
                "total": 0.33,
                "callers": [{"function": "compute_a", "total": 0.16, "share": 0.5}],
            }
        ],
    }
    out = io.StringIO()
    render_callers(doc, Console(file=out, width=100))
    assert "of work's total" in out.getvalue() and "caller's" not in out.getvalue()


def test_counts_on_lines_past_a_files_end_are_said(data: ExactCounts) -> None:
    # jq's parser.c was generated from a parser.y that Debian's patch then shortened:
    # its #line numbers ran to 979 of a 969-line file, every count below the patch on the
    # wrong line, and the listing said nothing (cg_annotate: "Information recorded about
    # lines past the end"). Here hot.c's source as kept with the run is cut short.
    hot = next(file for file in data.counted_files() if file.endswith("hot.c"))
    lines = (FIXTURES / "src" / "hot.c").read_text().splitlines()
    counted = sorted(line for (file, line), n in data.line_self().items() if file == hot and n)
    kept = lines[: counted[-1] - 1]
    doc = annotate.annotate_counts(data, [], threshold=0.0, context=None, recorded={hot: kept})
    (said,) = annotate.lines_past_end(doc)
    assert hot in said and f"1 counted line past its end (line {counted[-1]}" in said
    whole = annotate.annotate_counts(data, [], threshold=0.0, context=None, recorded={hot: lines})
    assert annotate.lines_past_end(whole) == []


def test_lines_pair_as_difflibs_sequence_matcher_pairs_them():
    """count_diff.matching is difflib's SequenceMatcher(None, a, b, autojunk=False) without
    importing difflib (and the re it imports): the same pairs on lists of repeated,
    moved, inserted and deleted lines."""
    import random
    from difflib import SequenceMatcher

    from perfsleuth.views.count_diff import matching

    rng = random.Random(29)
    for _ in range(400):
        words = [f"w{k}" for k in range(rng.randint(1, 8))] + ["", "}", "{"]
        a = [rng.choice(words) for _ in range(rng.randint(0, 60))]
        b = [rng.choice(words) for _ in range(rng.randint(0, 60))] if rng.random() < 0.5 else a[:]
        for _ in range(rng.randint(0, 4)):  # edits of a copy: lines in, out and moved
            if b and rng.random() < 0.5:
                del b[rng.randrange(len(b))]
            else:
                b.insert(rng.randint(0, len(b)), rng.choice(words))
        blocks = SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        theirs = {block.a + k: block.b + k for block in blocks for k in range(block.size)}
        assert matching(a, b) == theirs
