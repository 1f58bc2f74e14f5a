"""The run index beside runs.duckdb (store/run_index.py): commands answered by files kept
for a run find it without DuckDB, and never believe an index the file has outgrown."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from cli_runner import perfsleuth

from perfsleuth.commands.common import count_listing
from perfsleuth.formats import callgrind
from perfsleuth.formats.tool_output.counts import encode_counts
from perfsleuth.model.counts import Counts
from perfsleuth.model.line_counts import LineCounts
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder
from perfsleuth.model.run import Recording, RunInfo, StoredDocument
from perfsleuth.store import kept_counts, run_index
from perfsleuth.store.runs import Store
from perfsleuth.views import top

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FOLDED = FIXTURES / "hot.folded"


def sample_profile(weight: float = 1.0) -> Profile:
    builder = ProfileBuilder(unit="ns")
    builder.add([Frame("f", "prog"), Frame("main", "prog")], weight)
    return builder.build()


def _two_runs(root: Path) -> Store:
    store = Store(root)
    store.add_run(RunInfo(command="first", started=1000.5), Recording(sample_profile()))
    store.add_run(RunInfo(command="second", started=2000.25), Recording(sample_profile(2.0)))
    return store


def test_every_write_keeps_the_index(tmp_path: Path) -> None:
    store = _two_runs(tmp_path)
    assert store.indexed("latest") == run_index.IndexedRun(2, 2000.25, "ns")
    assert store.indexed("latest~1") == run_index.IndexedRun(1, 1000.5, "ns")
    assert store.indexed("1") == run_index.IndexedRun(1, 1000.5, "ns")
    store.put_document(1, "findings", "x", {"a": 1})
    assert store.indexed("latest") is not None  # a document written: still believed


def test_a_write_by_anything_else_makes_it_stale(tmp_path: Path) -> None:
    store = _two_runs(tmp_path)
    con = duckdb.connect(str(store.db))
    con.execute("DELETE FROM runs WHERE id = 2")
    con.close()
    assert store.indexed("latest") is None
    assert store.resolve("latest") == 1  # DuckDB answers


def test_an_unfinished_write_makes_it_stale(tmp_path: Path) -> None:
    store = _two_runs(tmp_path)
    store.db.with_name(store.db.name + ".wal").write_bytes(b"")
    assert store.indexed("latest") is None


def test_a_damaged_or_missing_index_is_not_believed(tmp_path: Path) -> None:
    store = _two_runs(tmp_path)
    index = store.root / run_index.INDEX_NAME
    index.write_text("{not json")
    assert store.indexed("latest") is None
    index.unlink()
    assert store.indexed("latest") is None


JSON = ["--format", "json"]


def _modules_after(argv: list[str], watched: tuple[str, ...] = ("_duckdb",)) -> tuple[str, bool]:
    """A command's output, and whether any of the `watched` modules (DuckDB's engine) was imported
    to answer it."""
    script = (
        "import sys; from perfsleuth.cli import main; "
        f"main({argv!r}); print(any(name in sys.modules for name in {watched!r}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    output, _, loaded = done.stdout.rstrip("\n").rpartition("\n")
    return output, loaded == "True"


def _top(store: Path, *args: str) -> dict:
    return json.loads(perfsleuth(store, "top", "--format", "json", *args).stdout)


def test_top_reads_the_kept_page_without_duckdb(tmp_path: Path) -> None:
    store = tmp_path / "store"
    perfsleuth(store, "import", str(FOLDED))
    _, duckdb_loaded = _modules_after(["top", "--store", str(store), "-n", "3"])
    assert not duckdb_loaded
    # nor the store's reader and the modules that compute a top (a fifth of its CPU)
    computing = ("perfsleuth.store.runs", "perfsleuth.views.top", "perfsleuth.model.counts")
    _, computing_loaded = _modules_after(["top", "--store", str(store), "-n", "3"], computing)
    assert not computing_loaded
    # and its text, written off a terminal, is laid out without rich (present/top_text.py)
    text, rich_loaded = _modules_after(["top", "--store", str(store), "-n", "3"], ("rich",))
    assert not rich_loaded and "leaf" in text
    from_file = _top(store, "-n", "3")
    (store / run_index.INDEX_NAME).unlink()  # the same top, through DuckDB
    assert _top(store, "-n", "3") == from_file
    assert len(from_file["rows"]) == 3 and from_file["run"] == "1"


def test_top_of_another_run_or_grouping_still_answers(tmp_path: Path) -> None:
    store = tmp_path / "store"
    perfsleuth(store, "import", str(FOLDED))
    perfsleuth(store, "import", str(FOLDED))
    assert _top(store, "1")["run"] == "1"
    assert _top(store)["run"] == "2"
    by_dso = _top(store, "--by", "dso")
    assert by_dso["by"] == "dso" and by_dso["rows"]
    missing = perfsleuth(store, "top", "7", check=False)
    assert missing.returncode != 0 and "no run '7'" in missing.stderr


def _count_runs(root: Path) -> Store:
    """Two count runs of the captured callgrind.out, the second with one line's count
    changed, stored as `record --mode count` stores them."""
    out = FIXTURES / "callgrind.out.hot"
    changed = root.parent / "callgrind.out.changed"
    lines = out.read_text().splitlines(keepends=True)
    cost = next(i for i, line in enumerate(lines) if line.startswith("0x"))
    address, number, count = lines[cost].split()  # positions: instr line
    lines[cost] = f"{address} {number} {int(count) + 1000}\n"
    for i, line in enumerate(lines):
        if line.startswith(("summary:", "totals:")):
            name, total = line.split()
            lines[i] = f"{name} {int(total) + 1000}\n"
    changed.write_text("".join(lines))
    store = Store(root)
    for path in (out, changed):
        document = StoredDocument(Counts.KIND, Counts.NAME, encode_counts(path))
        store.add_run(RunInfo(mode="count"), Recording(callgrind.read(path), documents=[document]))
    return store


def test_count_runs_are_read_from_their_kept_counts_once_loaded(tmp_path: Path) -> None:
    store = _count_runs(tmp_path / "store")
    assert kept_counts.load(store.root, "1", "2") is None  # not kept until a reader loads them
    through_duckdb = store.load_refs("1", "2")
    for run in through_duckdb:
        kept_counts.keep(store, run.info, run.counts)
    kept = kept_counts.load(store.root, "1", "latest")
    assert kept is not None
    for (run_id, lines), run in zip(kept, through_duckdb, strict=True):
        assert run.counts is not None
        assert run_id == run.id and lines == LineCounts.of(run.counts)


def test_diff_of_count_runs_without_duckdb_says_the_same(tmp_path: Path) -> None:
    store = _count_runs(tmp_path / "store")
    first = perfsleuth(store.root, "diff", "1", "2", "--format", "json").stdout
    # nor typing (its import was 6% of a view's instructions), nor orjson for a small one
    watched = ("_duckdb", "typing", "orjson")
    again, loaded = _modules_after(["diff", "1", "2", "--store", str(store.root)] + JSON, watched)
    assert not loaded
    assert json.loads(again) == json.loads(first)
    changed = json.loads(first)
    assert changed["delta"] == 1000 and changed["lines_changed"] == 1


def test_text_diff_of_count_runs_imports_neither_the_duckdb_store_nor_rich(
    tmp_path: Path,
) -> None:
    store = _count_runs(tmp_path / "store")
    through_duckdb = perfsleuth(store.root, "diff", "1", "2").stdout
    # nor what a command's start spared: dataclasses (and inspect), hashlib, the profile
    watched = ("_duckdb", "perfsleuth.store.runs", "perfsleuth.model.counts", "rich")
    watched += ("dataclasses", "inspect", "hashlib", "perfsleuth.model.profile", "typing")
    again, loaded = _modules_after(["diff", "1", "2", "--store", str(store.root)], watched)
    assert not loaded
    assert again + "\n" == through_duckdb and "1 line changed" in again


ANNOTATE_ARGS = (
    ["annotate", "fib", "1"],
    ["annotate", "fib", "2", "--split-recursion", "--context", "1"],
    ["annotate", "--all", "1", "--context", "2"],
    ["annotate", "--all", "latest", "--threshold", "0"],
)


@pytest.mark.parametrize("argv", ANNOTATE_ARGS, ids=" ".join)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_annotate_of_a_count_run_without_duckdb_says_the_same(
    tmp_path: Path, argv: list[str], fmt: str
) -> None:
    store = _count_runs(tmp_path / "store")
    options = ["--src", str(FIXTURES / "src"), "--format", fmt]
    through_duckdb = perfsleuth(store.root, *argv, *options).stdout
    # nor the store's reader, what a sampled run's listing reads, or rich for the text
    watched = ("_duckdb", "perfsleuth.store.runs", "perfsleuth.views.source", "rich", "hashlib")
    again, loaded = _modules_after([*argv, *options, "--store", str(store.root)], watched)
    assert not loaded
    assert again + "\n" == through_duckdb and "fib" in again


def test_a_sampled_run_is_annotated_as_before_and_not_listed_as_counts(tmp_path: Path) -> None:
    store = tmp_path / "store"
    perfsleuth(store, "import", str(FOLDED))
    shown = json.loads(perfsleuth(store, "annotate", "leaf", "--format", "json").stdout)
    assert shown["run"] == "1" and "events" not in shown
    refused = perfsleuth(store, "annotate", "--all", check=False)
    assert refused.returncode != 0 and "has no exact counts" in refused.stderr


def test_top_of_a_count_run_is_its_exact_top_kept_then_read_without_duckdb(
    tmp_path: Path,
) -> None:
    store = _count_runs(tmp_path / "store")
    first = _top(store.root, "1", "-n", "5")
    argv = ["top", "1", "-n", "5", "--store", str(store.root), *JSON]
    again, loaded = _modules_after(argv, ("_duckdb", "typing"))
    assert not loaded
    exact = store.load_run(1).exact()
    assert exact is not None
    expected = json.loads(json.dumps({"run": "1", **top.exact_top(exact, n=5)}))
    assert json.loads(again) == first == expected


def test_a_recorded_count_run_keeps_its_counts_as_it_is_stored(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    out = FIXTURES / "callgrind.out.hot"
    counts = encode_counts(out)
    recording = Recording(
        callgrind.read(out), documents=[StoredDocument(Counts.KIND, Counts.NAME, counts)]
    )
    for _ in range(2):
        info = store.add_run(RunInfo(mode="count"), recording)
        kept_counts.keep_recorded(store, info, recording, count_listing)
    kept = kept_counts.load(store.root, "1", "2")
    assert kept is not None
    assert kept == [(1, LineCounts.of(counts)), (2, LineCounts.of(counts))]
    listed = kept_counts.load_listing(store.root, "2")
    assert listed is not None and listed[0] == 2
    assert listed[1].exact == counts.counts.by_line() and dict(listed[1].sources) == counts.sources
    store.add_run(RunInfo(), Recording(sample_profile()))
    kept_counts.keep_recorded(store, store.run_info(3), Recording(sample_profile()), count_listing)
    assert kept_counts.load(store.root, "1", "3") is None  # a sampled run has none
    assert kept_counts.load_listing(store.root, "3") is None


def _cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_damaged_kept_file_is_computed_again_not_a_traceback(tmp_path: Path) -> None:
    """A kept file cut short (a full disk, a copy stopped half way) made `top`, `diff` and
    `annotate` of a count run end in a JSONDecodeError traceback; they answer as before
    and keep the file anew (`top` too when the run index is not believed)."""
    store = _count_runs(tmp_path / "store")
    views = (["top", "1"], ["diff", "1", "2"], ["annotate", "--all", "1"], ["annotate", "fib", "1"])
    before = [perfsleuth(store.root, *argv, *JSON).stdout for argv in views]
    kept = sorted((store.root / "answers").glob("run1-*.bin"))
    assert len(kept) == 3
    for path in kept:
        _cut_short(path)
    assert [perfsleuth(store.root, *argv, *JSON).stdout for argv in views] == before
    for path in kept:  # kept again, whole: the TopN page as JSON, the counts by marshal
        loads = json.loads if "-top-" in path.name else marshal.loads
        assert isinstance(loads(path.read_bytes()), dict)
    top_page = next(path for path in kept if "-top-" in path.name)
    _cut_short(top_page)
    (store.root / run_index.INDEX_NAME).unlink()  # DuckDB names the run, the page is read
    assert perfsleuth(store.root, *views[0], *JSON).stdout == before[0]
    json.loads(top_page.read_bytes())


def test_annotate_with_split_recursion_names_the_deeper_levels(tmp_path: Path) -> None:
    """`annotate parse_value --split-recursion` of a cJSON run listed its first level's
    1,417 instructions without a word of parse_value'2's 16,695,967."""
    store = _count_runs(tmp_path / "store")
    split = perfsleuth(store.root, "annotate", "fib", "1", "--split-recursion")
    assert "deeper levels are apart: fib'2 (" in split.stderr
    assert '`annotate "fib\'2" --split-recursion`' in split.stderr
    merged = perfsleuth(store.root, "annotate", "fib", "1")
    assert "recursion" not in merged.stderr and "--asm" not in merged.stderr
    asm = perfsleuth(store.root, "annotate", "fib", "1", "--asm")  # ignored without a word
    assert asm.stdout == merged.stdout and "perfsleuth export 1 --callgrind" in asm.stderr


def test_a_stale_index_is_written_again_by_the_first_read(tmp_path: Path) -> None:
    """A store copied with `cp -r` has new modification times: its index was never
    believed again, and every `diff` of two count runs went back to DuckDB."""
    store = _two_runs(tmp_path)
    stat = store.db.stat()
    os.utime(store.db, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert store.indexed("latest") is None
    assert store.resolve("latest") == 2  # DuckDB answers, and the index is kept again
    assert store.indexed("latest") == run_index.IndexedRun(2, 2000.25, "ns")


def test_a_read_leaves_an_index_written_by_a_writer_alone(tmp_path: Path) -> None:
    store = _two_runs(tmp_path)
    before = (store.root / run_index.INDEX_NAME).stat().st_ino  # a write replaces the file
    store.resolve("latest")
    assert (store.root / run_index.INDEX_NAME).stat().st_ino == before
