"""callgrind/cachegrind reader: exact costs, derived stacks, compression rules, errors.

The fixtures are real valgrind 3.19 outputs of tests/fixtures/src/hot.c
(`--tool=callgrind --dump-instr=yes`, `--tool=callgrind --cache-sim=yes`,
`--tool=cachegrind --cache-sim=yes`).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest
from annotate_report import file_function_rows

from perfsleuth.errors import UserError
from perfsleuth.formats import callgrind
from perfsleuth.model.profile import Profile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CALLGRIND = FIXTURES / "callgrind.out.hot"
CACHESIM = FIXTURES / "callgrind.out.cachesim"
CACHEGRIND = FIXTURES / "cachegrind.out.hot"
HOT = "/tmp/hot"


def file_totals(path: Path) -> list[int]:
    """The totals: line (sum of all costs), else the summary: line, as written by valgrind."""
    lines = path.read_text().splitlines()
    found = [ln for ln in lines if ln.startswith("totals:")] or [
        ln for ln in lines if ln.startswith("summary:")
    ]
    return [int(x) for x in found[-1].split(":", 1)[1].split()]


def self_by_function(p: Profile) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = defaultdict(float)
    for stack, weight, *_ in p.rows():
        leaf = p.frames[stack[0]]
        out[leaf.function, leaf.dso] += weight
    return out


def inclusive_by_function(p: Profile) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = defaultdict(float)
    for stack, weight, *_ in p.rows():
        for key in {(p.frames[f].function, p.frames[f].dso) for f in stack}:
            out[key] += weight
    return out


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "callgrind.out.1"
    path.write_text(text)
    return path


def test_line_costs_add_up_to_the_files_totals_for_every_event() -> None:
    for path in (CALLGRIND, CACHESIM, CACHEGRIND):
        costs = callgrind.line_costs(path)
        events = callgrind.parse(path).events
        sums = [sum(row[e] for row in costs.values()) for e in events]
        assert sums == file_totals(path), path.name


def test_cachegrind_line_costs_of_the_hot_loop() -> None:
    costs = callgrind.line_costs(CACHEGRIND)
    leaf = {k: v for k, v in costs.items() if k[1] == "leaf"}
    assert sum(v["Ir"] for v in leaf.values()) == 280021  # cg_annotate: hot.c:leaf
    assert all(k[0].endswith("hot.c") and k[2] > 0 for k in leaf)


def test_read_weights_by_ir_and_keeps_self_cost_exact() -> None:
    p = callgrind.read(CALLGRIND)
    assert p.unit == "instructions"
    assert round(p.total) == file_totals(CALLGRIND)[0] == 514572
    selfs = self_by_function(p)
    exact = callgrind.line_costs(CALLGRIND)
    for name in ("leaf", "other", "middle", "main", "fib"):
        # recursion levels (fib'2) are the function itself in the Profile
        expected = sum(v["Ir"] for k, v in exact.items() if k[1].split("'")[0] == name)
        assert round(selfs[name, HOT]) == expected, name


def test_derived_stacks_give_callgrinds_inclusive_cost() -> None:
    inclusive = inclusive_by_function(callgrind.read(CALLGRIND))
    # callgrind_annotate --inclusive=yes on the same file
    assert round(inclusive["main", HOT]) == 391990
    assert round(inclusive["middle", HOT]) == 240026
    assert round(inclusive["other", HOT]) == 120018
    assert round(inclusive["leaf", HOT]) == 280021


def test_callers_split_in_proportion_to_their_calls() -> None:
    p = callgrind.read(CALLGRIND)
    data = callgrind.parse(CALLGRIND)
    calls = data.calls[HOT, "leaf"]
    from_middle = sum(c[0] for (caller, _f, _l), c in calls.items() if caller[1] == "middle")
    via_middle = sum(
        w
        for stack, w, *_ in p.rows()
        if p.frames[stack[0]].function == "leaf"
        and len(stack) > 1
        and p.frames[stack[1]].function == "middle"
    )
    assert round(via_middle) == from_middle == 240014  # leaf(n) + leaf(n / 2)
    caller = next(p.frames[s[1]] for s, *_ in p.rows() if p.frames[s[0]].function == "leaf")
    assert caller.file.endswith("hot.c") and caller.line > 0  # the call site


def test_meta_keeps_all_events() -> None:
    p = callgrind.read(CACHESIM)
    assert p.meta["format"] == "callgrind"
    assert p.meta["events"][:3] == ["Ir", "Dr", "Dw"]
    assert p.meta["event_totals"]["D1mr"] == 985
    rows = [r for r in p.meta["event_lines"] if r[1] == "leaf"]
    assert sum(r[3][0] for r in rows) == 280021


def test_read_another_event() -> None:
    p = callgrind.read(CACHESIM, event="Dw")
    assert p.unit == "events" and p.meta["primary_event"] == "Dw"
    assert round(p.total) == 17967


def test_instr_costs_per_address() -> None:
    instr = callgrind.instr_costs(CALLGRIND)
    assert sum(v["Ir"] for v in instr.values()) == 514572
    leaf = [addr for (ob, fn, addr) in instr if ob == HOT and fn == "leaf"]
    assert len(leaf) > 3 and min(leaf) > 0x1000
    assert callgrind.instr_costs(CACHESIM) == {}  # positions: line only


def test_cachegrind_stacks_have_one_frame() -> None:
    p = callgrind.read(CACHEGRIND)
    assert p.meta["format"] == "cachegrind"
    assert {len(s) for s in p.stacks} == {1}
    assert round(p.total) == 515694


SYNTHETIC = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
positions: instr line
events: Ir Dr
summary: 116 5

ob=(1) /bin/prog
fl=(1) prog.c
fn=(1) main
0x1000 10 5 1
+4 +2 5
cfn=(2) work
calls=2 0x2000 20
+4 * 100 4
* -1 3
fi=(2) inline.h
+2 7 2
fe=(1)
+1 13 1

fn=(2)
0x2000 20 60 3
jump=1 +8 21
+8 +1 40 1
"""


def test_position_and_name_compression(tmp_path: Path) -> None:
    path = write(tmp_path, SYNTHETIC)
    costs = callgrind.line_costs(path)
    assert costs == {
        ("prog.c", "main", 10): {"Ir": 5, "Dr": 1},
        ("prog.c", "main", 12): {"Ir": 5, "Dr": 0},
        ("prog.c", "main", 11): {"Ir": 3, "Dr": 0},  # `* -1` after the call line at 12
        ("inline.h", "main", 7): {"Ir": 2, "Dr": 0},
        ("prog.c", "main", 13): {"Ir": 1, "Dr": 0},
        ("prog.c", "work", 20): {"Ir": 60, "Dr": 3},
        ("prog.c", "work", 21): {"Ir": 40, "Dr": 1},
    }
    instr = callgrind.instr_costs(path)
    assert instr["/bin/prog", "main", 0x1008 + 2] == {"Ir": 2, "Dr": 0}
    assert instr["/bin/prog", "work", 0x2008] == {"Ir": 40, "Dr": 1}


def test_synthetic_stacks(tmp_path: Path) -> None:
    p = callgrind.read(write(tmp_path, SYNTHETIC))
    stacks = {
        tuple((p.frames[f].function, p.frames[f].line) for f in s): w for s, w, *_ in p.rows()
    }
    assert stacks[("work", 20), ("main", 12)] == 60
    assert stacks[("work", 21), ("main", 12)] == 40
    assert stacks[(("main", 10),)] == 5
    assert round(inclusive_by_function(p)["main", "/bin/prog"]) == 116


MUTUAL_RECURSION = """\
events: Ir
fl=a.c
fn=main
1 5
cfn=a
calls=1 10
2 60
fn=a
10 10
cfn=b
calls=1 20
11 50
fn=b
20 20
cfn=a
calls=1 10
21 10
cfn=leaf
calls=1 30
22 30
fn=leaf
30 30
"""


def test_mutual_recursion_keeps_self_exact_and_outer_callers_whole(tmp_path: Path) -> None:
    p = callgrind.read(write(tmp_path, MUTUAL_RECURSION))
    selfs = self_by_function(p)
    assert (selfs["main", ""], selfs["a", ""], selfs["b", ""], selfs["leaf", ""]) == (5, 10, 20, 30)
    inclusive = inclusive_by_function(p)
    assert round(inclusive["main", ""]) == 65 == round(p.total)
    assert round(inclusive["b", ""]) >= 50  # its own cost and its call into leaf
    for stack, *_ in p.rows():  # the cycle is not unrolled
        names = [p.frames[f].function for f in stack]
        assert len(names) == len(set(names)) and names[-1] == "main"


def test_too_many_caller_chains_are_truncated_below_the_outer_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(callgrind, "MAX_CHAINS", 2)
    lines = ["events: Ir", "fl=a.c", "fn=main", "1 1"]
    for i in range(6):  # main -> mid_i -> leaf: six chains above leaf
        lines += [f"cfn=mid{i}", "calls=1 10", f"{2 + i} {11 + i}"]
    for i in range(6):
        lines += [f"fn=mid{i}", "10 1", "cfn=leaf", "calls=1 30", f"11 {10 + i}"]
    lines += ["fn=leaf", "30 45"]
    p = callgrind.read(write(tmp_path, "\n".join(lines) + "\n"))
    assert self_by_function(p)["leaf", ""] == 45
    assert round(inclusive_by_function(p)["main", ""]) == round(p.total) == 1 + 6 + 45
    assert any(p.frames[s[1]] == callgrind.TRUNCATED for s, *_ in p.rows() if len(s) > 1)


def test_cost_lines_are_scaled_to_all_events(tmp_path: Path) -> None:
    text = "events: Ir Dr Dw\nfl=a.c\nfn=f\n3 7\n"
    assert callgrind.line_costs(write(tmp_path, text)) == {
        ("a.c", "f", 3): {"Ir": 7, "Dr": 0, "Dw": 0}
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("events: Ir\nfl=a.c\nfn=(3)\n1 1\n", r"fn name \(3\) is used before it is defined"),
        ("events: Ir\nfl=a.c\nfn=f\ncalls=1 2\n1 1\n", "calls= without a cfn="),
        ("events: Ir\nfl=a.c\nfn=f\n1 x\n", "expected event counts"),
        ("events: Ir\nfl=a.c\nfn=f\n1 2 3\n", "2 costs for 1 events"),
        ("fl=a.c\nfn=f\n1 2\n", "cost line before the events: header"),
        ("events: Ir\nfl=a.c\nfn=f\nbogus line\n", "unexpected line"),
        ("fl=a.c\n", "no events: header"),
    ],
)
def test_bad_input_is_a_user_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        callgrind.read(write(tmp_path, text))
    assert str(info.value).startswith("callgrind.out.1")


def test_sniff() -> None:
    for path in (CALLGRIND, CACHESIM, CACHEGRIND):
        assert callgrind.sniff(path.read_bytes()[:4096])
    assert not callgrind.sniff(b"main;leaf 12\n")
    assert not callgrind.sniff(b"events: but nothing else\n")


STATICS = FIXTURES / "statics"  # two static `twin`s and an inlined header (see README)


def statics_run(tmp_path: Path, counted: str = "callgrind.out.statics") -> tuple[Path, Path]:
    """The fixture's binary and callgrind file, the file naming the binary where it is
    now and written after it (as valgrind writes it after the build)."""
    binary = tmp_path / "statics"
    binary.write_bytes((STATICS / "statics").read_bytes())
    text = (STATICS / counted).read_text()
    out = tmp_path / counted
    out.write_text(text.replace("/tmp/c12b/statics/statics", str(binary)))
    os.utime(binary, (1_000_000, 1_000_000))
    return binary, out


def test_two_static_functions_of_one_name_are_two_functions(tmp_path: Path) -> None:
    _binary, out = statics_run(tmp_path)
    data = callgrind.apart(out, callgrind.parse(out))
    exact = callgrind.exact_counts(data)
    own = exact.function_self()
    theirs = file_function_rows((STATICS / "callgrind_annotate.txt").read_text())
    # hot.c's twin: its own lines and those of the helper inlined from inline.h
    assert own["twin (hot.c)"] == theirs["hot.c", "twin"] + theirs["inline.h", "twin"]
    assert own["twin (cold.c)"] == theirs["cold.c", "twin"]
    assert "twin" not in own
    assert own["hot_run"] == theirs["hot.c", "hot_run"]
    merged = callgrind.exact_counts(callgrind.parse(out)).function_self()
    assert merged["twin"] == own["twin (hot.c)"] + own["twin (cold.c)"]
    sites = dict(zip((fn for _ob, fn in exact.functions), exact.entry_sites(), strict=True))
    assert Path(sites["twin (hot.c)"][0]).name == "hot.c"
    assert Path(sites["twin (cold.c)"][0]).name == "cold.c"


def test_a_name_of_which_one_function_ran_keeps_its_name(tmp_path: Path) -> None:
    """Only hot.c's twin ran while counting (--toggle-collect=hot_run): callgrind_annotate
    names it `twin`, and so does every view. gawk's copies of awk.h's static
    force_string_fmt, one emitted in each .c file that calls it, were named
    `force_string_fmt (awk.h)` where one of them ran, the name taken apart by the symbol
    table alone."""
    _binary, out = statics_run(tmp_path, "callgrind.out.statics-hot")
    data = callgrind.parse(out)
    assert callgrind.apart(out, data) is data
    own = callgrind.exact_counts(data).function_self()
    assert own["twin"] == 514_263 + 340_000  # callgrind_annotate's inline.h:twin, hot.c:twin


def test_each_static_twin_gets_the_calls_made_to_it(tmp_path: Path) -> None:
    _binary, out = statics_run(tmp_path)
    data = callgrind.apart(out, callgrind.parse(out))
    calls = {
        (caller[1], callee[1]): costs[0]
        for (caller, callee, _file, _line), costs in data.call_sites.items()
    }
    assert calls[("hot_run", "twin (hot.c)")] == 20_000
    assert calls[("cold_run", "twin (cold.c)")] == 500
    assert not any(callee == "twin" for _caller, callee in calls)


def test_a_binary_rebuilt_after_the_file_keeps_the_names(tmp_path: Path) -> None:
    """Its symbols may have moved: the counts stay as callgrind names them."""
    binary, out = statics_run(tmp_path)
    os.utime(binary, (out.stat().st_mtime + 10, out.stat().st_mtime + 10))
    data = callgrind.parse(out)
    assert callgrind.apart(out, data) is data
