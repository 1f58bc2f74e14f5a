"""The counts document (model, codec, store) and the gate's comparison, on a
callgrind.out captured from a real program (tests/fixtures)."""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from perfsleuth.commands import gate
from perfsleuth.errors import UserError
from perfsleuth.formats import callgrind
from perfsleuth.formats.tool_output.counts import encode_counts
from perfsleuth.model.counts import Counts, ExactCounts
from perfsleuth.model.line_counts import LineCounts
from perfsleuth.model.profile import Profile
from perfsleuth.model.run import Recording, RunInfo, StoredDocument
from perfsleuth.present import annotate_text, top_text
from perfsleuth.store.runs import Store
from perfsleuth.symbols import entries
from perfsleuth.symbols.demangle import valgrind_names
from perfsleuth.views import annotate, top

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CALLGRIND_OUT = FIXTURES / "callgrind.out.hot"


@pytest.fixture(scope="module")
def data() -> callgrind.CallgrindData:
    return callgrind.parse(CALLGRIND_OUT)


@pytest.fixture(scope="module")
def exact(data: callgrind.CallgrindData) -> ExactCounts:
    return callgrind.exact_counts(data)


def test_count_document_round_trips_the_file_exactly() -> None:
    doc = encode_counts(CALLGRIND_OUT)
    assert doc.callgrind_out == CALLGRIND_OUT.read_bytes()
    assert doc.to_json()["size"] == CALLGRIND_OUT.stat().st_size
    assert doc.counts.totals == callgrind.parse(CALLGRIND_OUT).totals


def test_function_and_line_counts_add_up_to_the_total(exact: ExactCounts) -> None:
    total = exact.total()
    assert total > 0
    assert sum(exact.function_self().values()) == total
    assert sum(exact.line_self().values()) == total


def test_the_tables_hold_the_same_counts_as_the_parsed_file(
    data: callgrind.CallgrindData, exact: ExactCounts
) -> None:
    per_function: dict[str, int] = {}
    for (_ob, fn), sites in data.self_costs.items():
        per_function[fn] = per_function.get(fn, 0) + sum(c[0] for c in sites.values())
    assert exact.function_self() == per_function
    fid = exact.functions.index(("/tmp/hot", "main"))
    expected = {address: c[0] for (ob, fn, address), c in data.instr.items() if fn == "main"}
    assert exact.instructions(fid) == expected


def test_recursion_levels_are_merged_into_their_function(exact: ExactCounts) -> None:
    split = exact.function_self()
    assert "fib'2" in split
    merged = exact.merged_recursion().function_self()
    assert "fib'2" not in merged
    assert merged["fib"] == split["fib"] + split["fib'2"]
    assert sum(merged.values()) == exact.total()


def test_top_of_a_count_run_is_exact_and_never_above_the_total(exact: ExactCounts) -> None:
    doc = top.exact_top(exact.merged_recursion(), n=0)
    shares = {row["function"]: row for row in doc["rows"]}
    assert doc["exact"] == "Ir" and doc["unit"] == "instructions"
    assert shares["fib"]["self"] == exact.merged_recursion().function_self()["fib"] / exact.total()
    assert all(row["self"] <= row["total"] <= 1.0 for row in doc["rows"])
    assert shares["main"]["total"] > shares["fib"]["total"] >= shares["fib"]["self"]
    files = top.exact_top(exact, by="file", n=0)["rows"]
    assert sum(row["self"] for row in files) == pytest.approx(1.0)


def test_top_total_of_mutually_recursive_functions_counts_each_call_once() -> None:
    # tests/fixtures/src/mutual.c frees a tree as jq frees its values: free_value calls
    # free_list, which calls free_value'2 for each item. Merged, free_value's total was
    # its self count over every level plus its calls into free_list, whose inclusive cost
    # holds the deeper levels again: 100% of the run (jq's jv_free 14.82% against
    # callgrind's 7.08%). It is the cost of the calls into its first level.
    data = callgrind.parse(FIXTURES / "callgrind.out.mutual")
    doc = top.exact_top(callgrind.exact_counts(data).merged_recursion(), n=0)
    totals = {row["function"]: row["total"] * doc["total"] for row in doc["rows"]}
    for name in ("free_value", "free_list", "build.constprop.0"):
        called = data.calls[("/tmp/mutual/mutual", name)]
        assert totals[name] == pytest.approx(sum(costs[0] for costs in called.values()))
    assert totals["free_value"] < 0.4 * doc["total"]


def test_a_functions_line_is_its_entry_not_a_lower_inlined_line() -> None:
    # f's entry instruction (lowest address) is on line 90; code inlined into it from
    # a helper defined above it sits on line 30 of the same file
    cells = {
        (("/bin/p", "f"), "p.c", 30, 0x1010): [5],
        (("/bin/p", "f"), "p.c", 90, 0x1000): [1],
        (("/bin/p", "f"), "p.c", 95, 0x1020): [1],
    }
    data = callgrind.CallgrindData(
        events=["Ir"], cells=cells, totals=[7], own_file={("/bin/p", "f"): "p.c"}
    )
    assert callgrind.exact_counts(data).entry_sites() == [("p.c", 90)]


def test_a_functions_line_is_its_entrys_outermost_frame_when_the_symbolizer_named_it() -> None:
    """The C library's _int_malloc, counted by callgrind: its entry instruction's line is
    checked_request2size's (malloc.c:1338), inlined there; record names its own line
    (3798, the entry's outermost frame) in meta["entries"]. A name two objects define
    (strcmp) takes it only where the named file is the function's own."""
    cells = {
        (("/lib/libc.so.6", "_int_malloc"), "malloc.c", 1338, 0x1000): [3],
        (("/lib/libc.so.6", "_int_malloc"), "malloc.c", 3810, 0x1010): [9],
        (("/lib/libc.so.6", "strcmp"), "strcmp.S", 20, 0x2000): [1],
        (("/lib/ld.so", "strcmp"), "rtld-strcmp.S", 7, 0x3000): [1],
    }
    own = {
        ("/lib/libc.so.6", "_int_malloc"): "malloc.c",
        ("/lib/libc.so.6", "strcmp"): "strcmp.S",
        ("/lib/ld.so", "strcmp"): "rtld-strcmp.S",
    }
    entries = {"_int_malloc": ["malloc.c", 3798], "strcmp": ["strcmp.S", 18]}
    data = callgrind.CallgrindData(
        events=["Ir"], cells=cells, totals=[14], own_file=own, meta={"entries": entries}
    )
    exact = callgrind.exact_counts(data)
    sites = dict(zip(exact.functions, exact.entry_sites(), strict=True))
    assert sites[("/lib/libc.so.6", "_int_malloc")] == ("malloc.c", 3798)
    assert sites[("/lib/libc.so.6", "strcmp")] == ("strcmp.S", 18)
    assert sites[("/lib/ld.so", "strcmp")] == ("rtld-strcmp.S", 7)
    without = callgrind.CallgrindData(events=["Ir"], cells=cells, totals=[14], own_file=own)
    assert callgrind.exact_counts(without).entry_sites()[0] == ("malloc.c", 1338)


CORE = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ptr/non_null.rs"


def rust_total() -> ExactCounts:
    """A Rust function counted by callgrind (a rustc 1.95 release build): its entry
    instruction is core's NonNull::eq, inlined, so callgrind's fl= for it is
    non_null.rs; the symbolizer's outermost frame is main.rs:8."""
    fn = ("/t/tiny", "tiny::total")
    cells = {(fn, CORE, 1720, 0x141A0): [50], (fn, "/t/src/main.rs", 5, 0x141C5): [24950]}
    data = callgrind.CallgrindData(
        events=["Ir"],
        cells=cells,
        totals=[25000],
        own_file={fn: CORE},
        meta={"entries": {"tiny::total": ["/t/src/main.rs", 8]}},
    )
    return callgrind.exact_counts(data)


def test_an_entry_named_in_a_file_other_than_callgrinds_own_file_is_taken() -> None:
    """main.rs:8 is in a file the function has counted lines in: its line."""
    assert rust_total().entry_sites() == [("/t/src/main.rs", 8)]


def test_annotate_of_a_function_lists_its_own_file_first() -> None:
    doc = annotate.annotate_counts(
        rust_total(), [], threshold=0.0, context=2, functions={"tiny::total"}
    )
    assert [entry["file"] for entry in doc["files"]] == ["/t/src/main.rs", CORE]


def test_rusts_standard_library_is_read_from_rust_src(tmp_path: Path) -> None:
    """rustc names its std /rustc/<commit>/library/...; --src of rustup's rust-src
    (<sysroot>/lib/rustlib/src/rust) reads it, and without it the listing says how."""
    rust_src = tmp_path / "rust"
    inside = rust_src / "library" / "core" / "src" / "ptr" / "non_null.rs"
    inside.parent.mkdir(parents=True)
    inside.write_text("x\n" * 1720)
    doc = annotate.annotate_counts(
        rust_total(), [rust_src], threshold=0.0, context=0, functions={"tiny::total"}
    )
    assert doc["files"][1]["path"] == str(inside)
    bare = annotate.annotate_counts(rust_total(), [], threshold=0.0, context=0)
    out = io.StringIO()
    annotate_text.write({"run": "1", **bare}, out)
    text = out.getvalue()
    assert f"{CORE} (source not found; Rust's standard library: `rustup component add" in text


def test_symbols_are_named_as_valgrind_names_them() -> None:
    """Demangled, a Rust legacy symbol without its hash (valgrind drops it)."""
    rust = "_ZN4tiny5total17h4a0d3149afe73269E"
    cxx = "_ZN6shapes5totalIlEElRKSt6vectorIT_SaIS2_EE"
    assert valgrind_names([rust, cxx, "malloc"]) == {
        rust: "tiny::total",
        cxx: "long shapes::total<long>(std::vector<long, std::allocator<long> > const&)",
        "malloc": "malloc",
    }


def test_an_entry_is_written_as_valgrind_names_its_file() -> None:
    counted = [("./stdio-common/./stdio-common/printf_fp.c", 220), ("localeinfo.h", 331)]
    assert entries.counted_site(("./stdio-common/printf_fp.c", 216), counted) == (
        "./stdio-common/./stdio-common/printf_fp.c",
        216,
    )
    assert entries.counted_site(("other.c", 216), counted) is None


def test_the_parsed_tables_round_trip_through_json(exact: ExactCounts) -> None:
    again = ExactCounts.from_json(exact.to_json())
    assert again.function_self() == exact.function_self()
    assert again.line_self() == exact.line_self()
    assert again.inclusive_by_id() == exact.inclusive_by_id()


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


def test_unnamed_code_is_merged_per_object_for_comparisons() -> None:
    cells = {(("/bin/k", "0x1250"), "", 0, 0): [3], (("/bin/k", "0x12a0"), "", 0, 0): [4]}
    exact = callgrind.exact_counts(callgrind.CallgrindData(events=["Ir"], cells=cells, totals=[7]))
    assert exact.function_self() == {"0x1250": 3, "0x12a0": 4}
    assert exact.function_self(merge_unnamed=True) == {"[unnamed code in k]": 7}


def stored(tmp_path: Path, document: object) -> Store:
    store = Store(tmp_path)
    recording = Recording(Profile(), documents=[StoredDocument(Counts.KIND, Counts.NAME, document)])
    store.add_run(RunInfo(mode="count"), recording)
    return store


def test_the_store_reads_counts_back_typed_and_current(tmp_path: Path) -> None:
    counts = encode_counts(CALLGRIND_OUT)
    loaded = stored(tmp_path, counts).load_run(1)
    assert loaded.counts is not None
    assert loaded.counts.callgrind_out == counts.callgrind_out
    assert loaded.counts.sources == counts.sources
    exact = loaded.exact(split_recursion=True)
    assert exact is not None and exact.function_self() == counts.counts.function_self()


def test_counts_recorded_before_sources_were_kept_are_upgraded_on_load(tmp_path: Path) -> None:
    old = Counts(CALLGRIND_OUT.read_bytes()).to_json()
    for key in ("sources", "exact", "stamps"):
        del old[key]
    loaded = stored(tmp_path, old).load_run(1)
    assert loaded.counts is not None and loaded.counts.sources == {}
    assert loaded.counts.callgrind_out == CALLGRIND_OUT.read_bytes()
    exact = loaded.exact()
    assert exact is not None and exact.total() == callgrind.parse(CALLGRIND_OUT).total()


def test_a_run_without_counts_has_none(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.add_run(RunInfo(), Recording(Profile()))
    assert store.load_run(1).exact() is None


def test_a_counts_document_newer_than_this_perfsleuth_is_refused(tmp_path: Path) -> None:
    newer = {**Counts(b"").to_json(), "version": Counts.VERSION + 1}
    with pytest.raises(UserError, match="upgrade perfsleuth"):
        stored(tmp_path, newer).load_run(1)


def test_a_source_file_changed_since_the_run_is_said(tmp_path: Path) -> None:
    source = tmp_path / "k.c"
    source.write_text("int main() {\n  return 0;\n}\n")
    doc = {"files": [{"file": str(source), "path": str(source)}]}
    stat = source.stat()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    stamps = {str(source): [stat.st_size, stat.st_mtime, digest]}
    assert annotate.changed_sources(doc, {}, stamps, started=0.0) == []
    source.write_text("int main() {\n  return 1;\n}\n")
    os.utime(source, (stat.st_atime, stat.st_mtime + 5))
    (said,) = annotate.changed_sources(doc, {}, stamps, started=0.0)
    assert "changed since the run" in said
    # a file kept with the run is shown as it was: nothing to say
    assert annotate.changed_sources(doc, {str(source): ["x"]}, stamps, started=0.0) == []
    # a run recorded before fingerprints: a file modified after it started
    (newer,) = annotate.changed_sources(doc, {}, {}, started=stat.st_mtime - 10)
    assert "newer than the run" in newer


CHAINS = """# callgrind format
version: 1
positions: line
events: Ir
summary: 610
ob=/bin/p
fl=p.c
fn=main
1 10
cfn=a1
calls=1 10
2 300
cfn=a2
calls=1 20
3 200
cfn=a3
calls=1 30
4 100
fn=a1
10 100
cfn=g
calls=1 50
11 200
fn=a2
20 100
cfn=g
calls=1 50
21 100
fn=a3
30 60
cfn=g
calls=1 50
31 40
fn=g
50 340
"""


def test_callers_of_a_count_run_are_its_counted_calls_not_the_derived_chains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """g is called from a1, a2 and a3. The stacks derived from the calls keep at most
    MAX_CHAINS chains a function (speedtest1's sqlite3BtreeInsert read 17.50% where `top`
    says 17.81%); the counted calls have every caller, and g's total is `top`'s."""
    from perfsleuth.views import callgraph

    monkeypatch.setattr(callgrind, "MAX_CHAINS", 2)
    path = tmp_path / "callgrind.out.chains"
    path.write_text(CHAINS)
    data = callgrind.parse(path)
    exact = callgrind.exact_counts(data).merged_recursion()
    derived = callgraph.neighbours(callgrind.profile_of(data), "g")
    assert {row["function"] for row in derived["callers"]} != {"a1", "a2", "a3"}  # cut
    (g,) = callgraph.exact_callgraph(exact, "^g$", lambda name: callgraph.neighbours(None, name))
    assert {row["function"]: row["total"] * 610 for row in g["callers"]} == pytest.approx(
        {"a1": 200, "a2": 100, "a3": 40}
    )
    top_row = next(r for r in top.exact_top(exact, n=0)["rows"] if r["function"] == "g")
    assert g["total"] == pytest.approx(top_row["total"]) == pytest.approx(340 / 610)


def counted_callgraph(fixture: str, binary: str, name: str) -> tuple[dict, dict, dict, int]:
    """exact_callgraph's document of `name` in a callgrind fixture, read without the
    derived stacks; its callers' counted calls by merged name; `top`'s totals; the run's."""
    from perfsleuth.views import callgraph

    data = callgrind.parse(FIXTURES / fixture)
    exact = callgrind.exact_counts(data).merged_recursion()
    totals = {row["function"]: row["total"] for row in top.exact_top(exact, n=0)["rows"]}

    def stacks(name: str) -> callgraph.CallGraphDoc:
        raise AssertionError(f"{name} read from the derived stacks")

    (doc,) = callgraph.exact_callgraph(exact, f"^{name}$", stacks)
    counted: dict[str, float] = defaultdict(float)
    for (caller, _file, _line), costs in data.calls[(binary, name)].items():
        counted[caller[1].split("'")[0]] += costs[0]
    return dict(doc), counted, totals, data.totals[0]


def test_callers_of_a_recursion_entered_from_several_places_are_its_first_levels() -> None:
    """parser.c recurses as tcc's parser does: expr calls unary, which calls expr'2 for a
    parenthesised operand, entered from stmt (through expr) and decl (straight into
    unary). Read from the stacks derived from the calls, unary's total was 93.77% where
    `top` and callgrind say 94.31%, and stmt was named its caller, which it never calls
    (tcc's unary: 11.49% against 22.52%). Its callers and callees are those of its first
    level, as callgrind_annotate's --tree=both gives them, and sum to `top`'s total."""
    callers = {}
    for name in ("unary", "expr"):
        doc, counted, totals, total = counted_callgraph(
            "callgrind.out.parser", "/tmp/c11/parser/parser", name
        )
        callers[name] = {row["function"]: row["total"] * total for row in doc["callers"]}
        assert callers[name] == pytest.approx(counted)
        assert doc["total"] == pytest.approx(totals[name])
        assert sum(row["total"] for row in doc["callers"]) == pytest.approx(doc["total"])
    assert set(callers["unary"]) == {"decl", "expr"}


def test_a_function_of_one_level_in_a_merged_recursion_reads_its_counted_calls() -> None:
    """sortcb.c's run() sorts with qsort, whose comparator cmp() runs run() again, as
    gawk's interpreter does for a user-defined sort order: merged, run's recursion goes
    through cmp, which has no level of its own (no cmp'2). Its callers, callees and total
    are its counted calls, as callgrind_annotate's --tree=both gives them; read from the
    stacks derived from the calls, gawk's sort_user_func had 150,977,267 instructions of
    callers where `top` and callgrind say 150,977,374."""
    doc, counted, totals, total = counted_callgraph(
        "callgrind.out.sortcb", "/tmp/counts13/sortcb/sortcb", "cmp"
    )
    assert {row["function"]: row["total"] * total for row in doc["callers"]} == pytest.approx(
        counted
    )
    assert set(counted) == {"msort_with_tmp.part.0"}
    assert doc["total"] == pytest.approx(totals["cmp"])
    assert sum(row["total"] for row in doc["callees"]) == pytest.approx(doc["total"])
    assert {row["function"] for row in doc["callees"]} == {"run", "[self]"}


def test_functions_of_one_level_on_a_cycle_through_a_deeper_level_read_their_calls() -> None:
    """sortnative.c's interpreter runs its sort builtin through call'2, and the
    comparator calls a script function through call'2 again, as mujs's
    Array.prototype.sort does: native, sort_builtin and cmp have one level each, but
    their calls lead back to them through call'2. Read from the stacks derived from the
    calls, mujs's sortcmp had msort 21,402,807 and jsR_run 2,059,897 instructions of
    callers where callgrind_annotate's --tree=caller gives msort 135,024,791 alone, and
    jsR_callcfunction, whose callers are js_call's, had jsR_run among them."""
    for name, callers in (
        ("native", {"call"}),
        ("sort_builtin", {"native"}),
        ("cmp", {"msort_with_tmp.part.0"}),
    ):
        doc, counted, totals, total = counted_callgraph(
            "callgrind.out.sortnative", "/tmp/counts14/sortnative/sortnative", name
        )
        got = {row["function"]: row["total"] * total for row in doc["callers"]}
        assert got == pytest.approx(counted)
        assert set(counted) == callers
        assert doc["total"] == pytest.approx(totals[name])
        assert sum(row["total"] for row in doc["callees"]) == pytest.approx(doc["total"])


def test_callers_and_callees_of_a_count_run_are_its_counted_calls(tmp_path: Path) -> None:
    """mutual.c's work() calls build (recursive) and free_value (in a recursion through
    free_list): its callees are the inclusive costs of its calls, as callgrind counted
    them, and sum with its own count to `top`'s total; read from the derived stacks they
    were only near them."""
    from cli_runner import perfsleuth

    data = callgrind.parse(FIXTURES / "callgrind.out.mutual")
    store = tmp_path / "store"
    perfsleuth(store, "import", str(FIXTURES / "callgrind.out.mutual"))
    (work,) = json.loads(perfsleuth(store, "callees", "^work$", "--format", "json").stdout)[
        "functions"
    ]
    total = data.totals[0]
    counted = {
        callee[1]: costs[0]
        for callee, callers in data.calls.items()
        for (caller, _file, _line), costs in callers.items()
        if caller[1] == "work"
    }
    assert {row["function"]: row["total"] * total for row in work["callees"]} == pytest.approx(
        {**counted, "[self]": work["self"] * total}
    )
    top_doc = json.loads(perfsleuth(store, "top", "-n", "0", "--format", "json").stdout)
    totals = {row["function"]: row["total"] for row in top_doc["rows"]}
    assert work["total"] == pytest.approx(totals["work"])
    (free,) = json.loads(perfsleuth(store, "callers", "^free$", "--format", "json").stdout)[
        "functions"
    ]
    assert sum(row["total"] for row in free["callers"]) == pytest.approx(free["total"])
    assert free["total"] == pytest.approx(totals["free"])
    (free_list,) = json.loads(
        perfsleuth(store, "callers", "^free_list$", "--format", "json").stdout
    )["functions"]
    assert sum(row["total"] for row in free_list["callers"]) <= 1.0  # the stacks': no 128%


def test_a_function_in_a_recursion_reads_its_first_levels_calls(tmp_path: Path) -> None:
    """free_value and free_list call each other (free_value'2, free_list'2), build calls
    itself: each one's callers are its first level's (the outermost calls, each counted
    once) and sum to `top`'s total; its callees, [self] over every level beside them, too.
    Read from the derived stacks, free_value's callers and callees summed to more."""
    from cli_runner import perfsleuth

    store = tmp_path / "store"
    perfsleuth(store, "import", str(FIXTURES / "callgrind.out.mutual"))
    top_doc = json.loads(perfsleuth(store, "top", "-n", "0", "--format", "json").stdout)
    rows = {row["function"]: row for row in top_doc["rows"]}
    for name in ("free_value", "free_list", "build.constprop.0"):
        for side in ("callers", "callees"):
            (doc,) = json.loads(perfsleuth(store, side, f"^{name}$", "--format", "json").stdout)[
                "functions"
            ]
            assert doc["total"] == pytest.approx(rows[name]["total"]), (name, side)
            assert doc["self"] == pytest.approx(rows[name]["self"]), (name, side)
            assert sum(r["total"] for r in doc[side]) == pytest.approx(doc["total"]), (name, side)


FORMFEED = FIXTURES / "formfeed"  # formfeed.c and callgrind's file of it, from /tmp/c12/ff


def test_a_source_with_a_form_feed_keeps_its_lines_as_the_compiler_numbers_them(
    tmp_path: Path,
) -> None:
    """GNU sources put a form feed (^L) on a line of its own between their sections, and
    str.splitlines ends a line at one too: every line after it was kept a line off, so
    GNU m4 1.4.19's `expand_token` listed its prologue's 2,408,287 instructions on the line
    above its `{` and the 3,440,410 of `switch (t)` on the blank line before it."""
    out = tmp_path / "callgrind.out"
    real = (FORMFEED / "callgrind.out.formfeed").read_bytes()
    out.write_bytes(real.replace(b"/tmp/c12/ff/", f"{FORMFEED}/".encode()))
    counts = encode_counts(out, cwd=FORMFEED)
    source = str(FORMFEED / "formfeed.c")
    numbered = (FORMFEED / "formfeed.c").read_text().split("\n")[:-1]
    assert counts.sources[source] == numbered
    lines = LineCounts.of(counts).files[source]
    texts = dict(zip(lines.lines, lines.texts or [], strict=True))
    assert texts[8] == "  return x * 2;" and texts[16] == "    sum += twice (i);"


def test_the_inclusive_cost_of_functions_calling_each_other_counts_each_call_once() -> None:
    """mutual.c's free_value and free_list call each other (jq's jv_free and
    jvp_array_free): the cost run under either is that of the calls into them from
    outside, not the sum of their totals, each of which holds the other's calls; a set
    of one function is its total, `top`'s."""
    data = callgrind.parse(FIXTURES / "callgrind.out.mutual")
    exact = callgrind.exact_counts(data).merged_recursion()
    ids = {fn: fid for fid, (_ob, fn) in enumerate(exact.functions)}
    pair = {"free_value", "free_list"}
    entered = sum(
        costs[0]
        for name in pair
        for (caller, _file, _line), costs in data.calls[("/tmp/mutual/mutual", name)].items()
        if caller[1].split("'")[0] not in pair
    )
    inclusive = exact.inclusive_by_id()
    assert entered < inclusive[ids["free_value"]] + inclusive[ids["free_list"]]
    assert exact.inclusive_of([{ids[name] for name in pair}]) == [entered]
    assert exact.inclusive_of([{ids["free_list"]}, set()]) == [inclusive[ids["free_list"]], 0]


def test_a_deeper_levels_total_is_at_most_its_first_levels() -> None:
    """mutual.c's free_value'2 runs free_list'2, which runs free_value'2 again: the
    level's calls out nest in one another, self plus calls 127.8% of the run (mujs's
    js_call'2 389%, as callgrind_annotate says), shown as 100%. A deeper level runs
    inside its first level, so its total is at most that one's, and says it is a bound;
    build's own recursion calls nothing through others and keeps its exact total."""
    data = callgrind.parse(FIXTURES / "callgrind.out.mutual")
    doc = top.exact_top(callgrind.exact_counts(data), n=0)
    rows = {row["function"]: row for row in doc["rows"]}
    level = ("/tmp/mutual/mutual", "free_value'2")
    own = sum(costs[0] for costs in data.self_costs[level].values())
    calls = sum(
        costs[0]
        for callee, sites in data.calls.items()
        if callee != level
        for (caller, _file, _line), costs in sites.items()
        if caller == level
    )
    assert own + calls > doc["total"]
    assert rows["free_value'2"]["total"] == rows["free_value"]["total"] < 0.5
    assert rows["free_value'2"].get("total_at_most")
    assert "total_at_most" not in rows["build.constprop.0'2"]
    assert rows["build.constprop.0'2"]["total"] < rows["build.constprop.0"]["total"]
    text = io.StringIO()
    top_text.write({"run": "1", **doc}, text)
    (line,) = [line for line in text.getvalue().splitlines() if "free_value'2" in line]
    assert f"≤ {100 * rows['free_value']['total']:.2f}%" in line
