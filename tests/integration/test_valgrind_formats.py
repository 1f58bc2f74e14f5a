"""The callgrind/cachegrind reader against valgrind's own annotators.

callgrind_annotate and cg_annotate read the same files; their per-function
numbers must equal ours. Runs on the committed fixtures and on a fresh valgrind
run of tests/fixtures/src/hot.c, so a new valgrind version is checked too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from perfsleuth.formats import callgrind
from perfsleuth.model.counts import RECURSION_SUFFIX

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROW = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*):(.*?)(?: \[(.*)\])?$")
TOTALS = re.compile(r"^\s*([\d,]+) \(100.0%\)\s+PROGRAM TOTALS")

needs_valgrind = pytest.mark.skipif(
    not shutil.which("callgrind_annotate"),
    reason="valgrind is not installed (apt install valgrind)",
)


def annotate(path: Path, inclusive: bool) -> tuple[int, list[tuple[int, str, str, str]]]:
    """PROGRAM TOTALS and the (cost, file, function, object) rows of callgrind_annotate."""
    out = subprocess.run(
        [
            "callgrind_annotate",
            "--show=Ir",
            f"--inclusive={'yes' if inclusive else 'no'}",
            "--threshold=100",
        ]
        + [str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    head, _, body = out.partition("file:function")
    total = next(int(m[1].replace(",", "")) for ln in head.splitlines() if (m := TOTALS.match(ln)))
    rows = []
    for line in body.split("\n-- ", 1)[0].splitlines():
        m = ROW.match(line)
        if m:
            rows.append((int(m[1].replace(",", "")), m[2], m[3], m[4] or ""))
    assert rows, out[:2000]
    return total, rows


def our_costs(path: Path) -> tuple[dict, dict]:
    p = callgrind.read(path)
    selfs: dict[str, float] = defaultdict(float)
    inclusive: dict[tuple[str, str], float] = defaultdict(float)
    for stack, weight, *_ in p.rows():
        selfs[p.frames[stack[0]].function] += weight
        for key in {(p.frames[f].function, p.frames[f].dso) for f in stack}:
            inclusive[key] += weight
    return selfs, inclusive


def ambiguous_functions(path: Path) -> set[str]:
    """Names whose callgrind_annotate rows are not one function's inclusive cost.

    Same-named functions (statics, or one name in several objects) are one node
    for perfsleuth but several for callgrind_annotate, and a recursive function's
    inclusive cost counts its recursive calls again there.
    """
    ids: dict[str, set[str]] = defaultdict(set)
    for m in re.finditer(r"^c?fn=\((\d+)\) (.+)$", path.read_text(), re.MULTILINE):
        ids[m[2]].add(m[1])
    merged = {name for name, found in ids.items() if len(found) > 1}
    data = callgrind.parse(path)
    recursive = {fn[1] for fn, calls in data.calls.items() if any(c[0] == fn for c in calls)}
    return merged | recursive


def check_against_callgrind_annotate(path: Path) -> None:
    selfs, inclusive = our_costs(path)
    total, self_rows = annotate(path, inclusive=False)
    expected_self: dict[str, int] = defaultdict(int)
    for cost, _file, fn, _ob in self_rows:
        expected_self[RECURSION_SUFFIX.sub("", fn)] += cost  # f'2 is f in the Profile
    assert {fn: round(c) for fn, c in selfs.items() if round(c)} == {
        fn: c for fn, c in expected_self.items() if c
    }
    # Cost callgrind counts in a call but in no function's lines (the program's
    # exit path): inclusive numbers may differ by at most that much.
    unattributed = total - sum(expected_self.values())
    # callgrind_annotate prints a called function's inclusive cost on the row named
    # the way its callers name it; its other rows (code inlined from other files)
    # hold a part of it only. So the largest row is the function's inclusive cost.
    _, incl_rows = annotate(path, inclusive=True)
    # a recursive function's levels (f, f'2) are one in the Profile: not comparable
    levels = {RECURSION_SUFFIX.sub("", fn) for _c, _f, fn, _o in incl_rows if "'" in fn}
    skip = ambiguous_functions(path) | levels
    expected: dict[str, int] = defaultdict(int)
    for cost, _file, fn, _ob in incl_rows:
        if fn not in skip and not RECURSION_SUFFIX.search(fn):
            expected[fn] = max(expected[fn], cost)
    ours = {fn: round(c) for (fn, _ob), c in inclusive.items()}
    for fn, cost in expected.items():
        assert abs(ours[fn] - cost) <= unattributed, fn
    assert len(expected) > 100


@needs_valgrind
@pytest.mark.parametrize("name", ["callgrind.out.hot", "callgrind.out.cachesim"])
def test_fixture_matches_callgrind_annotate(name: str) -> None:
    check_against_callgrind_annotate(FIXTURES / name)


@needs_valgrind
def test_fresh_valgrind_run_matches_callgrind_annotate(tmp_path: Path) -> None:
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    exe = tmp_path / "hot"
    subprocess.run(["gcc", "-O1", "-g", "-o", exe, FIXTURES / "src" / "hot.c"], check=True)
    out = tmp_path / "callgrind.out"
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out}"]
        + [str(exe), "5000"],
        check=True,
        capture_output=True,
    )
    check_against_callgrind_annotate(out)
    selfs, _ = our_costs(out)
    assert selfs["leaf"] > selfs["middle"]


@needs_valgrind
def test_cachegrind_matches_cg_annotate() -> None:
    path = FIXTURES / "cachegrind.out.hot"
    out = subprocess.run(
        ["cg_annotate", "--threshold=0", "--auto=no", "--show-percs=no", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    events = callgrind.parse(path).events
    ours: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * len(events))
    for (file, fn, _line), costs in callgrind.line_costs(path).items():
        for i, event in enumerate(events):
            ours[file, fn][i] += costs[event]
    rows = 0
    for line in out.split("file:function", 1)[1].splitlines():
        fields = line.split()
        if len(fields) == len(events) + 1 and fields[0][0].isdigit():
            file, _, fn = fields[-1].rpartition(":")
            assert ours[file, fn] == [int(f.replace(",", "")) for f in fields[:-1]], line
            rows += 1
    assert rows > 100
