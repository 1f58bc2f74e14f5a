"""The Firefox Profiler export: its processed format (version 70) checked against the
profiler's own type definitions (tests/fixtures/firefox-processed-v70.json lists them)
and read back into the stacks and weights of the run, thread by thread. The profiler's
own code loads it in tests/integration/test_firefox_profiler.py."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread
from perfsleuth.present import PROFILE, TitledProfile, firefox, formats_for, write

FORMAT = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "firefox-processed-v70.json").read_text()
)
MAIN = Frame("main", "/usr/bin/app", "/src/app.c", 10)
WORK = Frame("work", "/usr/bin/app", "/src/app.c", 20)
SYSCALL = Frame("do_syscall_64", "[kernel.kallsyms]", kernel=True)
COMPRESS = Frame("compress", "[python:app]", "/srv/app.py", 8)


def profile(unit: str = "samples") -> Profile:
    b = ProfileBuilder(unit=unit)
    main, worker = Thread(101, 100, "main"), Thread(102, 100, "worker")
    b.add([WORK, MAIN], 5, thread=main)
    b.add([SYSCALL, WORK, MAIN], 2, thread=worker)
    b.add([MAIN], 3, thread=worker)
    b.add([COMPRESS, MAIN], 4, thread=worker)
    return b.build()


def export(p: Profile, tmp_path: Path) -> dict:
    """What `perfsleuth export --firefox` writes, read back."""
    path = tmp_path / "run.json"
    write(PROFILE, TitledProfile(p, "run 1: ./app"), "firefox", str(path))
    return json.loads(path.read_text())


def check_table(table: dict, columns: list[str]) -> int:
    assert set(columns) <= set(table), set(columns) - set(table)
    assert all(len(table[c]) == table["length"] for c in columns)
    return int(table["length"])


def test_every_table_has_the_columns_of_version_70(tmp_path: Path) -> None:
    doc = export(profile(), tmp_path)
    assert set(FORMAT["profile"]) <= set(doc)
    assert set(FORMAT["meta"]) <= set(doc["meta"])
    assert doc["meta"]["preprocessedProfileVersion"] == 70
    for name, columns in FORMAT["shared"].items():
        check_table(doc["shared"][name], columns)
    for thread in doc["threads"]:
        assert set(FORMAT["thread"]) <= set(thread)
        assert isinstance(thread["pid"], str) and isinstance(thread["tid"], int)
        samples = thread["samples"]
        assert set(FORMAT["samples"]) <= set(samples)
        assert samples["weightType"] in FORMAT["weightTypes"]
        check_table(samples, ["stack", "weight", "time"])
        check_table(thread["markers"], FORMAT["markers"])


def test_indices_point_inside_their_tables(tmp_path: Path) -> None:
    doc = export(profile(), tmp_path)
    shared = doc["shared"]
    strings = len(shared["stringArray"])
    frames, funcs = shared["frameTable"], shared["funcTable"]
    stacks = shared["stackTable"]
    assert all(0 <= f < frames["length"] for f in stacks["frame"])
    # A stack's prefix comes before it: prefixOffset 0 is a root, k > 0 the stack k back.
    assert all(0 <= off <= i for i, off in enumerate(stacks["prefixOffset"]))
    assert all(0 <= f < funcs["length"] for f in frames["func"])
    assert all(0 <= c < len(doc["meta"]["categories"]) for c in frames["category"])
    assert all(0 <= n < strings for n in funcs["name"])
    assert all(r == -1 or 0 <= r < shared["resourceTable"]["length"] for r in funcs["resource"])
    assert all(s is None or 0 <= s < shared["sources"]["length"] for s in funcs["source"])
    assert all(0 <= n < strings for n in shared["sources"]["filename"])
    for thread in doc["threads"]:
        assert all(0 <= s < stacks["length"] for s in thread["samples"]["stack"])


def decode(doc: dict) -> dict[tuple[str, tuple[str, ...]], float]:
    """(thread name, root-first function names) -> weight, as the profiler reads them."""
    shared = doc["shared"]
    names = shared["stringArray"]
    stacks, frames, funcs = shared["stackTable"], shared["frameTable"], shared["funcTable"]

    def path(stack: int) -> tuple[str, ...]:
        out = []
        while True:
            out.append(names[funcs["name"][frames["func"][stacks["frame"][stack]]]])
            offset = stacks["prefixOffset"][stack]
            if offset == 0:
                return tuple(reversed(out))
            stack -= offset

    found: dict[tuple[str, tuple[str, ...]], float] = defaultdict(float)
    for thread in doc["threads"]:
        samples = thread["samples"]
        for stack, weight in zip(samples["stack"], samples["weight"], strict=True):
            found[(thread["name"], path(stack))] += weight
    return dict(found)


def test_reads_back_as_the_runs_stacks_per_thread(tmp_path: Path) -> None:
    assert decode(export(profile(), tmp_path)) == {
        ("main", ("main", "work")): 5,
        ("worker", ("main", "work", "do_syscall_64")): 2,
        ("worker", ("main",)): 3,
        ("worker", ("main", "compress")): 4,
    }


def test_kernel_and_python_frames_have_their_categories(tmp_path: Path) -> None:
    doc = export(profile(), tmp_path)
    shared = doc["shared"]
    categories = [c["name"] for c in doc["meta"]["categories"]]
    by_function = {
        shared["stringArray"][shared["funcTable"]["name"][func]]: categories[category]
        for func, category in zip(
            shared["frameTable"]["func"], shared["frameTable"]["category"], strict=True
        )
    }
    assert by_function == {
        "main": "Other", "work": "Other", "do_syscall_64": "Kernel", "compress": "Python",
    }  # fmt: skip


def test_a_run_in_nanoseconds_weighs_in_milliseconds(tmp_path: Path) -> None:
    doc = export(profile(unit="ns"), tmp_path)
    samples = [t["samples"] for t in doc["threads"]]
    assert {s["weightType"] for s in samples} == {"tracing-ms"}
    assert sum(w for s in samples for w in s["weight"]) == pytest.approx(14 / firefox.NS_PER_MS)


def test_export_offers_it() -> None:
    assert "firefox" in formats_for(PROFILE)
