from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.views import annotate, callgraph, diff, flame, top

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
    lines = flame.folded_lines(profile())
    assert lines == ["main;a;work 6", "main;b;memcpy 1", "main;b;work 3"]


def test_flame_tree_totals():
    root = flame.tree(profile())
    assert root["v"] == 10
    (main,) = root["c"]
    assert {c["n"]: c["v"] for c in main["c"]} == {"a": 6, "b": 4}


def test_flame_html_escapes_hostile_names():
    b = ProfileBuilder()
    b.add([Frame("operator<</script><img src=x>", "x")], 1)
    page = flame.html(b.build(), "t<i>tle")
    assert "</script><img" not in page
    assert "t&lt;i&gt;tle" in page


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


def test_annotate_reads_source_lines(tmp_path: Path):
    (tmp_path / "prog.c").write_text("\n".join(f"line {i}" for i in range(1, 40)))
    (entry,) = annotate.annotate(profile(), "^work$", [tmp_path])
    by_line = {r["line"]: r for r in entry["lines"]}
    assert by_line[2]["self"] == pytest.approx(0.6)
    assert by_line[3]["source"] == "line 3"
    assert entry["path"] == str(tmp_path / "prog.c")


def test_annotate_without_source_still_lists_costs():
    (entry,) = annotate.annotate(profile(), "^work$", [])
    assert entry["path"] is None
    assert {r["line"] for r in entry["lines"]} == {2, 3}


def test_diff_matches_functions_across_renamed_binaries():
    b = ProfileBuilder()
    b.add([Frame("work", "prog-O3", "prog.c", 2), Frame("main", "prog-O3")], 10)
    doc = diff.diff(profile(), b.build())
    rows = {r["function"]: r for r in doc["rows"]}
    assert rows["work"]["self_a"] == pytest.approx(0.9)
    assert rows["work"]["self_b"] == pytest.approx(1.0)
