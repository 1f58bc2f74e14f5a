"""Count mode under real valgrind: determinism, agreement with callgrind_annotate,
annotate --all, exact diffs and the programs valgrind cannot run."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from annotate_report import callgrind_annotate, file_function_rows
from cli_runner import perfsleuth

from perfsleuth.collect import valgrind
from perfsleuth.formats import callgrind
from perfsleuth.model.counts import Counts, ExactCounts
from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration

KEYS_SOURCE = Path(__file__).resolve().parents[2] / "examples" / "counts" / "keys.c"


def exact_counts(store: Store, run: int) -> ExactCounts:
    """Recursion levels apart, as callgrind_annotate shows them."""
    exact = store.load_run(run).exact(split_recursion=True)
    assert exact is not None
    return exact


def count_document(store: Store, run: int) -> Counts:
    doc = store.load_run(run).counts
    assert doc is not None
    return doc


@pytest.fixture(scope="module")
def counted(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with runs 1 and 2 of keys and run 3 of keys-split, all count runs."""
    store = tmp_path_factory.mktemp("counts") / "store"
    for program in ("keys", "keys", "keys-split"):
        perfsleuth(store, "record", "--mode", "count", "--", str(examples_built / program))
    return store


def test_same_workload_twice_gives_identical_counts(counted: Path) -> None:
    store = Store(counted)
    first, second = (exact_counts(store, run) for run in (1, 2))
    assert first.total() == second.total() > 10_000_000
    assert first.function_self() == second.function_self()
    assert store.run_info(1).total == store.run_info(2).total


def test_function_counts_equal_callgrind_annotate(counted: Path, tmp_path: Path) -> None:
    doc = count_document(Store(counted), 1)
    out_file = tmp_path / "callgrind.out"
    out_file.write_bytes(doc.callgrind_out)
    report = callgrind_annotate(out_file)
    ours = exact_counts(Store(counted), 1).function_self()
    assert function_table(report) == {name: n for name, n in ours.items() if n}
    assert ours["keys_equal"] > 1_000_000


def test_export_gives_callgrinds_own_file_to_its_tools(counted: Path, tmp_path: Path) -> None:
    """docs/counts.md says the run keeps callgrind's file for callgrind_annotate or
    KCachegrind: `export --callgrind` hands it out, byte for byte; a sampled run has none."""
    out_file = tmp_path / "run1.callgrind"
    perfsleuth(counted, "export", "1", "--callgrind", str(out_file))
    assert out_file.read_bytes() == count_document(Store(counted), 1).callgrind_out
    report = subprocess.run(
        ["callgrind_annotate", str(out_file)], capture_output=True, text=True, check=True
    ).stdout
    totals = re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", report, re.M)
    assert totals and int(totals[1].replace(",", "")) == Store(counted).run_info(1).total
    sampled = tmp_path / "sampled"
    folded = Path(__file__).resolve().parents[1] / "fixtures" / "hot.folded"
    perfsleuth(sampled, "import", str(folded))
    refused = perfsleuth(sampled, "export", "1", "--callgrind", str(tmp_path / "x"), check=False)
    assert refused.returncode == 2 and "only count runs" in refused.stderr


FORMATS = r"""
#include <stdio.h>
int main(void) {
    char buffer[32];
    unsigned long length = 0;
    for (int i = 0; i < 20000; i++)
        length += (unsigned long)snprintf(buffer, sizeof buffer, "%d", i);
    printf("%lu\n", length);
    return 0;
}
"""


def test_a_count_runs_findings_speak_of_instructions(tmp_path: Path) -> None:
    """A count run's shares are of exact instruction counts: its findings said "of CPU
    time" (Lua's '18.1% of CPU time is in printf-style formatting') and "samples"."""
    (tmp_path / "formats.c").write_text(FORMATS)
    program = tmp_path / "formats"
    subprocess.run(["gcc", "-O2", "-o", str(program), str(tmp_path / "formats.c")], check=True)
    store = tmp_path / "store"
    perfsleuth(store, "record", "--mode", "count", "--", str(program))
    advice = json.loads(perfsleuth(store, "advise", "--format", "json").stdout)
    (printf,) = [f for f in advice["findings"] if f["rule"] == "formatting.printf"]
    assert " of the instructions are in printf-style formatting" in printf["title"]
    said = [f["title"] for f in advice["findings"]] + [
        line for f in advice["findings"] for line in f["evidence"]
    ]
    assert not [line for line in said if "CPU time" in line or " samples" in line], said
    # libc is a runtime, left to the rules: not a library to rebuild with PGO
    assert "hot-library" not in [f["kind"] for f in advice["findings"]]


TEMPLATE = r"""
#include <cstdio>
#include <numeric>
#include <vector>

namespace shapes {
template <class T>
__attribute__((noinline)) long total(const std::vector<T>& items)
{
    return std::accumulate(items.begin(), items.end(), 0L);
}
}  // namespace shapes

int main()
{
    std::vector<long> v;
    for (long i = 0; i < 3000; i++)
        v.push_back(i % 97);
    std::printf("%ld\n", shapes::total(v));
    return 0;
}
"""


def test_a_cxx_template_is_placed_at_its_own_line_not_an_inlined_std_helpers(
    tmp_path: Path,
) -> None:
    """g++ -O2 gives shapes::total<long>'s entry instruction the line of vector::end()'s
    inlined iterator (stl_iterator.h:1073), which callgrind takes for its file; the
    symbolizer's outermost frame (tot.cpp, its return line) was not used: it was looked
    up by the mangled symbol, and valgrind names functions demangled (Rust's too)."""
    source = tmp_path / "tot.cpp"
    source.write_text(TEMPLATE)
    program = tmp_path / "tot"
    subprocess.run(["g++", "-O2", "-g", "-o", str(program), str(source)], check=True)
    store = tmp_path / "store"
    perfsleuth(store, "record", "--mode", "count", "--", str(program))
    rows = json.loads(perfsleuth(store, "top", "--format", "json").stdout)["rows"]
    (total,) = [r for r in rows if r["function"].startswith("long shapes::total<long>(")]
    line = TEMPLATE.splitlines().index(
        "    return std::accumulate(items.begin(), items.end(), 0L);"
    )
    assert (total["file"], total["line"]) == (str(source), line + 1)


def function_table(report: str) -> dict[str, int]:
    """callgrind_annotate's per-function self counts, summed over the files it splits by."""
    theirs: dict[str, int] = defaultdict(int)
    for (_file, function), count in file_function_rows(report).items():
        theirs[function] += count
    return dict(theirs)


def test_line_counts_equal_callgrind_annotate_auto_annotation(
    counted: Path, tmp_path: Path
) -> None:
    doc = count_document(Store(counted), 1)
    out_file = tmp_path / "callgrind.out"
    out_file.write_bytes(doc.callgrind_out)
    report = subprocess.run(
        ["callgrind_annotate", "--auto=yes", "--inclusive=no", "--context=100000", str(out_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ours = perfsleuth(counted, "annotate", "--all", "1", "--format", "json").stdout
    (keys_c,) = [f for f in json.loads(ours)["files"] if f["file"].endswith("counts/keys.c")]
    expected = annotated_lines(report, keys_c["file"])
    assert {row["line"]: row["counts"][0] for row in keys_c["lines"]} == expected
    assert expected[29] == 5_000_000


def annotated_lines(report: str, file: str) -> dict[int, int]:
    """line -> count of FILE's auto-annotated source in callgrind_annotate's report."""
    lines = report.splitlines()
    # it names the file as the compile unit did, which may be relative
    start = 4 + next(
        i
        for i, line in enumerate(lines)
        if line.startswith("-- Auto-annotated source: ") and file.endswith(line.split(": ")[1])
    )
    length = len(Path(file).read_text().splitlines())
    source_lines = [line for line in lines[start:] if "  => " not in line]  # call lines
    counts = {}
    for number, line in enumerate(source_lines[:length], 1):
        first = line.split()[0] if line.strip() else "."
        counts[number] = 0 if first == "." else int(first.replace(",", ""))
    return counts


def test_annotate_all_output_of_two_runs_diffs_cleanly(counted: Path) -> None:
    first = perfsleuth(counted, "annotate", "--all", "1").stdout.splitlines()
    second = perfsleuth(counted, "annotate", "--all", "2").stdout.splitlines()
    assert first[0].startswith("run 1:") and second[0].startswith("run 2:")
    assert first[1:] == second[1:]
    files = [line for line in first if line.startswith("-- ")]
    assert files == sorted(files)
    assert any(re.match(r"^\s+5,000,000  \{$", line) for line in first)


def test_diff_of_count_runs_is_exact(counted: Path) -> None:
    store = Store(counted)
    before, after = (exact_counts(store, run) for run in (1, 3))
    done = perfsleuth(counted, "diff", "1", "3", "--format", "json")
    doc = json.loads(done.stdout)
    assert doc["delta"] == after.total() - before.total()
    top = doc["functions"][0]
    assert top["function"] == "keys_equal"
    expected = after.function_self()["keys_equal"]
    assert top["delta"] == expected - before.function_self()["keys_equal"]
    assert doc["functions_changed"] == len(doc["functions"])


def test_a_program_started_through_env_is_the_one_counted(
    examples_built: Path, tmp_path: Path
) -> None:
    """`env VAR=... ./tcc` (a wrapper that executes the real program, as libtool's and
    pyenv's do) was stored as env's run, with env's build-id: `gate` took tcc's baseline
    for another build, and tcc's functions were not placed by its own symbols. The run
    is the executed program's."""
    keys = examples_built / "keys"
    store = tmp_path / "store"
    done = perfsleuth(store, "record", "--mode", "count", "--", "env", "COUNTED=1", str(keys))
    assert f"env executed {keys}: the run counts {keys}" in done.stderr
    meta = Store(store).load_run(1).info.meta
    assert meta["executable"] == str(keys)
    assert meta["build_id"] == valgrind.build_id(str(keys)) != valgrind.build_id("/usr/bin/env")


STATICS = Path(__file__).resolve().parents[1] / "fixtures" / "statics"


def test_two_static_functions_of_one_name_are_two_rows(tmp_path: Path) -> None:
    """hot.c's and cold.c's static `twin` were one row with both counts (m4's two
    `peek_token`s); each is its own row, named with its file, with callgrind_annotate's
    counts, hot.c's with the lines of the helper inlined into it from inline.h."""
    sources = [str(STATICS / name) for name in ("main.c", "hot.c", "cold.c")]
    binary = tmp_path / "statics"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(binary), *sources], check=True)
    store = tmp_path / "store"
    perfsleuth(store, "record", "--mode", "count", "--", str(binary))
    rows = json.loads(perfsleuth(store, "top", "-n", "0", "--format", "json").stdout)["rows"]
    counted = {row["function"]: row for row in rows}
    out_file = tmp_path / "callgrind.out"
    out_file.write_bytes(count_document(Store(store), 1).callgrind_out)
    theirs = file_function_rows(callgrind_annotate(out_file))
    assert "twin" not in counted
    hot, cold = counted["twin (hot.c)"], counted["twin (cold.c)"]
    assert hot["counts"]["Ir"] == theirs["hot.c", "twin"] + theirs["inline.h", "twin"]
    assert cold["counts"]["Ir"] == theirs["cold.c", "twin"] > 0
    assert (Path(hot["file"]).name, Path(cold["file"]).name) == ("hot.c", "cold.c")


def test_only_restricts_counting_to_the_function(examples_built: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    keys = str(examples_built / "keys")
    perfsleuth(store, "record", "--mode", "count", "--only", "keys_equal", "--", keys)
    functions = exact_counts(Store(store), 1).function_self()
    assert functions["keys_equal"] > 10_000_000
    assert functions.get("main", 0) == 0


def test_only_with_an_unknown_function_says_so(examples_built: Path, tmp_path: Path) -> None:
    keys = str(examples_built / "keys")
    done = perfsleuth(
        tmp_path / "s", "record", "--mode", "count", "--only", "no_such_fn", "--", keys, check=False
    )
    assert done.returncode == 2
    assert "no function of that name" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "s").exists()


def test_only_in_a_stripped_program_says_it_is_stripped(
    examples_built: Path, tmp_path: Path
) -> None:
    """It said no function of that name was called, and to look with `nm`, which finds
    no symbols in a stripped binary (cJSON's driver, stripped, `--only parse_value`)."""
    stripped = tmp_path / "keys"
    subprocess.run(["strip", "-o", str(stripped), str(examples_built / "keys")], check=True)
    said = valgrind.only_not_collected("keys_equal", str(stripped))
    assert "is stripped (it has no symbol table)" in said and "nm" not in said
    assert "has this function" in valgrind.only_not_collected(
        "keys_equal", str(examples_built / "keys")
    )


THREADED = r"""
#include <pthread.h>
#include <stdio.h>
static void *work(void *arg) { return arg; }
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    puts("joined");
    return 0;
}
"""


def test_a_program_that_starts_threads_is_said_to_move_its_counts(tmp_path: Path) -> None:
    """zstd's I/O thread moved its counts by up to 1,600 instructions between runs of one
    binary, and `diff` listed 17 changed functions, without a word."""
    source = tmp_path / "threaded.c"
    source.write_text(THREADED)
    program = tmp_path / "threaded"
    subprocess.run(["gcc", "-O2", "-g", "-pthread", "-o", str(program), str(source)], check=True)
    done = perfsleuth(tmp_path / "s", "record", "--mode", "count", "--", str(program))
    assert "the program started threads" in done.stderr
    single = callgrind.parse(Path(__file__).parents[1] / "fixtures" / "callgrind.out.hot")
    assert not valgrind.started_threads(single.self_costs)


def test_program_valgrind_cannot_run_gets_its_reason(tmp_path: Path) -> None:
    source = tmp_path / "avx512.c"
    # vpaddd %zmm0,%zmm0,%zmm0: AVX-512, which valgrind 3.19 does not implement
    source.write_text(
        'int main(void){__asm__ volatile(".byte 0x62,0xf1,0x7d,0x48,0xfe,0xc0");return 0;}\n'
    )
    program = tmp_path / "avx512"
    subprocess.run(["gcc", "-o", str(program), str(source)], check=True)
    done = perfsleuth(tmp_path / "s", "record", "--mode", "count", "--", str(program), check=False)
    assert done.returncode == 2
    assert "valgrind could not run" in done.stderr
    assert "unhandled instruction bytes: 0x62" in done.stderr
    assert "Traceback" not in done.stderr


def test_cache_sim_adds_miss_counts_per_line(examples_built: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    keys = str(examples_built / "keys")
    perfsleuth(store, "record", "--mode", "count", "--cache-sim", "--", keys, "1000")
    data = exact_counts(Store(store), 1)
    assert (
        data.events[:3] == ["Ir", "Dr", "Dw"]
        and "D1mr" in data.events
        and "LLmr" not in data.events
    )
    doc = json.loads(perfsleuth(store, "annotate", "--all", "--format", "json").stdout)
    assert doc["events"] == data.events
    assert doc["totals"]["I1mr"] > 0
    # The web UI's TopN is the CLI's, with every event's exact count per function.
    from perfsleuth.server.api import Api

    top = json.loads(perfsleuth(store, "top", "-n", "0", "--format", "json").stdout)
    served = json.loads(Api(Store(store), []).get("/api/runs/1/top", {}).body)
    assert served["rows"] == top["rows"] and served["events"] == data.events
    counted = [r["counts"] for r in top["rows"]]
    for event in ("Ir", "D1mr"):  # every line's count lands in exactly one function's
        in_lines = sum(data.cells.event(data.index(event)))
        assert sum(c[event] for c in counted) == in_lines > 0


def test_one_line_change_shows_as_exactly_that_line(examples_built: Path, tmp_path: Path) -> None:
    source, program, store = tmp_path / "k.c", tmp_path / "k", tmp_path / "store"
    original = KEYS_SOURCE.read_text()
    for text in (original, edited(original)):
        source.write_text(text)
        subprocess.run(["gcc", "-O2", "-g", "-o", str(program), str(source)], check=True)
        perfsleuth(store, "record", "--mode", "count", "--", str(program))
    doc = json.loads(perfsleuth(store, "diff", "1", "2", "--format", "json").stdout)
    assert [(r["line_a"], r["line_b"], r["delta"]) for r in doc["lines"]] == [
        (None, 74, 7_000_000),
        (73, None, -2_000_000),
    ]
    listings = [perfsleuth(store, "annotate", "--all", run).stdout for run in ("1", "2")]
    changed = [
        line
        for line in difflib.unified_diff(*(text.splitlines() for text in listings), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert [line for line in changed if "keys_equal(a, b)" in line or "inserted" in line] == [
        "+            .      /* an inserted line */",
        "-    2,000,000          hits += keys_equal(a, b);",
        "+    7,000,000          hits += keys_equal(a, b) + (i == 7);",
    ]


def edited(source: str) -> str:
    """keys.c with a line inserted in keys_equal (moving the lines below) and main changed."""
    early = "    if (a == b)\n        return 1;\n    if (a->hash"
    return source.replace(early, "    /* an inserted line */\n" + early, 1).replace(
        "hits += keys_equal(a, b);", "hits += keys_equal(a, b) + (i == 7);"
    )


def test_a_source_edited_after_the_build_is_said(tmp_path: Path) -> None:
    """mawk's execute.c given a line at its top after mawk was built, then recorded: the
    run kept the edited file and annotate showed every count a line off (`{` of
    eval_underflow with the 401,191 of the bozo call below it), without a word."""
    source = tmp_path / "sum.c"
    source.write_text(
        "#include <stdio.h>\n"
        "int main(void) {\n"
        "    long s = 0;\n"
        "    for (long i = 0; i < 100000; i++) s += i % 7;\n"
        '    printf("%ld\\n", s);\n'
        "    return 0;\n"
        "}\n"
    )
    program = tmp_path / "sum"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(program), str(source)], check=True)
    store = tmp_path / "store"
    built = perfsleuth(store, "record", "--mode", "count", "--", str(program))
    assert "modified after" not in built.stderr
    later = program.stat().st_mtime + 60
    os.utime(source, (later, later))  # edited after the build, not rebuilt
    stale = perfsleuth(store, "record", "--mode", "count", "--", str(program))
    said = f"{source} was modified after {program} was built"
    assert said in stale.stderr
    assert said not in perfsleuth(store, "annotate", "main", "1").stderr
    assert said in perfsleuth(store, "annotate", "main", "2").stderr
    assert said in perfsleuth(store, "annotate", "--all", "2").stderr


SORTNATIVE_SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "src" / "sortnative.c"


def test_a_count_runs_sorting_share_is_callgrinds_inclusive_cost_of_qsort(
    tmp_path: Path,
) -> None:
    """An interpreter whose sort builtin's comparator calls back into it, as MuJS's
    does: the sorting class's share is callgrind_annotate's inclusive cost of qsort (the
    stacks derived from the calls, the interpreter's cycle one unit, gave it a sliver)."""
    program = tmp_path / "sortnative"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(program), str(SORTNATIVE_SOURCE)], check=True)
    store = tmp_path / "store"
    perfsleuth(store, "record", "--mode", "count", "--", str(program))
    advice = json.loads(perfsleuth(store, "advise", "--format", "json").stdout)
    (sorting,) = [f for f in advice["findings"] if f["rule"] == "class.sort.sorting"]
    out_file = tmp_path / "callgrind.out"
    out_file.write_bytes(count_document(Store(store), 1).callgrind_out)
    report = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    qsort = re.search(r"^\s*([\d,]+) \([\d.]+%\)\s+\S*msort\.c:qsort ", report, re.M)
    assert qsort is not None, report
    assert sorting["share"] == pytest.approx(
        int(qsort[1].replace(",", "")) / Store(store).run_info(1).total
    )
    assert sorting["function"] == "sort_builtin"
