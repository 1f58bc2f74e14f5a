"""gate's comparison of a baseline with a run: a function the baseline file left out
(below its 200 largest) has no known count before, so it is not listed as new unless it
grew past the file's smallest count.

tests/fixtures/gate/: `gate --export` of two real count runs of jq 1.6 (Debian's source,
gcc -O2 -g, `jq -f work.jq data.json` on 3.5 MB), the second built with jv.c's
jvp_refcnt_dec made noinline."""

from __future__ import annotations

import json
from pathlib import Path

from perfsleuth.commands.gate import MAX_FUNCTIONS, compare

GATE = Path(__file__).resolve().parents[1] / "fixtures" / "gate"


def baseline(functions: dict[str, int], **extra: object) -> dict:
    return {
        "run": "1",
        "event": "Ir",
        "total": 1000,
        "build_id": "",
        **extra,
        "functions": functions,
    }


def test_a_function_below_the_files_largest_is_not_listed_as_new() -> None:
    kept = {f"f{i}": 1000 - i for i in range(MAX_FUNCTIONS)}
    current = {"total": 1100, "build_id": "", "functions": {**kept, "f0": 1100, "small": 40}}
    doc = compare(baseline(kept), current, 0.5, 0)
    assert [row["function"] for row in doc["changes"]] == ["f0"]


def test_a_function_new_since_a_complete_baseline_is_listed() -> None:
    current = {"total": 1100, "build_id": "", "functions": {"main": 1000, "slow": 100}}
    doc = compare(baseline({"main": 1000}, complete=True), current, 0.5, 0)
    assert doc["changes"] == [{"function": "slow", "a": 0, "b": 100, "delta": 100}]


def test_the_unnamed_code_of_a_build_under_another_name_is_paired() -> None:
    """speedtest1 rebuilt as speedtest1-new: its PLT stubs were `0 -> 30` and `30 -> 0`."""
    before = {"main": 1000, "[unnamed code in speedtest1]": 30, "[unnamed code in libc.so.6]": 5}
    after = {"main": 1100, "[unnamed code in speedtest1-new]": 30, "[unnamed code in libc.so.6]": 5}
    doc = compare(
        baseline(before, complete=True), {"total": 1135, "build_id": "", "functions": after}, 0.5, 0
    )
    assert [row["function"] for row in doc["changes"]] == ["main"]


def test_a_function_that_grew_past_the_files_smallest_count_is_listed_first() -> None:
    """jq with jvp_refcnt_dec noinline: +11,659,785 instructions, 10,426,612 of them in
    that function, which the baseline's jq inlined; the gate listed jv_free's +1,543,110
    first and left jvp_refcnt_dec out as below the file's list."""
    base = json.loads((GATE / "jq.baseline.json").read_text())
    current = json.loads((GATE / "jq-reg.baseline.json").read_text())
    floor = min(base["functions"].values())
    doc = compare(base, current, 0.005, 0)
    first = doc["changes"][0]
    assert first["function"] == "jvp_refcnt_dec" and "jvp_refcnt_dec" not in base["functions"]
    assert first["a"] is None and first["a_at_most"] == floor
    assert first["delta"] == current["functions"]["jvp_refcnt_dec"] - floor
    listed = {row["function"] for row in doc["changes"]}
    assert all(current["functions"][f] > floor for f in listed - set(base["functions"]))


def test_the_programs_unnamed_code_pairs_with_a_baseline_file_cut_short() -> None:
    """bzip2 rebuilt as bzip2-reg, judged against bzip2's exported file: the PLT stubs
    were listed as `30 -> 0  [unnamed code in bzip2]`, because the loader's and valgrind's
    unnamed code, below the file's list, left more than one name to pair."""
    base = json.loads((GATE / "bzip2.baseline.json").read_text())
    current = json.loads((GATE / "bzip2-reg.run.json").read_text())
    assert base["functions"]["[unnamed code in bzip2]"] == 30
    assert current["functions"]["[unnamed code in bzip2-reg]"] == 30
    listed = [row["function"] for row in compare(base, current, 0.005, 0)["changes"]]
    assert listed and not [name for name in listed if name.startswith("[unnamed code in bzip2")]


def test_a_function_the_stored_baseline_run_inlined_is_named() -> None:
    """mujs's stackidx made noinline (tests/fixtures/count_diff/mujs_noinline.json: the
    line counts of the two runs): the gate listed it as `<= 374 -> 74,100,646` and said
    nothing of the 44,379,573 instructions the baseline run counted on its lines inside
    its callers, which `diff` names. Against a stored run the gate reads the lines too."""
    import io

    from rich.console import Console

    from perfsleuth.commands.gate import inlined_between
    from perfsleuth.model.line_counts import LineCounts
    from perfsleuth.present import gate_text

    runs = json.loads((GATE.parent / "count_diff" / "mujs_noinline.json").read_text())
    a, b = LineCounts.from_json(runs["a"]), LineCounts.from_json(runs["b"])
    rows = inlined_between(a, b)
    assert [(r["function"], r["inlined_in"], r["count"]) for r in rows[:2]] == [
        ("stackidx", "a", 44_379_573),
        ("js_pop", "b", 10_442_894),
    ]
    current = {"total": b.total("Ir"), "build_id": "x", "functions": b.function_self("Ir")}
    doc = compare(baseline(a.function_self("Ir"), total=a.total("Ir")), current, 0.01, 0)
    out = io.StringIO()
    gate_text.render(
        {**doc, "run": "3", "exit_status": 0, "inlining": rows}, Console(file=out, width=200)
    )
    assert (
        "stackidx is a function of its own in run 3 and was inlined in run 1: run 1 counted "
        "44,379,573 Ir on its lines" in out.getvalue()
    )
