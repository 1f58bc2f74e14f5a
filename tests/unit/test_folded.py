"""FlameGraph folded stacks.

hot.folded is real output of perf's stackcollapse script (`perf script report
stackcollapse -- --kernel`) on tests/fixtures/src/hot.c.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.formats import folded
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread
from perfsleuth.present.folded import lines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HOT = FIXTURES / "hot.folded"


def stacks(p: Profile) -> dict[tuple[str, ...], float]:
    """Root-first function names -> weight."""
    return {tuple(p.frames[f].function for f in reversed(s)): w for s, w, *_ in p.rows()}


def write_text(p: Profile) -> str:
    return "".join(line + "\n" for line in lines(p))


def test_reads_perf_stackcollapse_output() -> None:
    p = folded.read(HOT)
    assert p.unit == "samples" and p.total == 850 and p.num_samples == 850
    assert stacks(p)["hot", "leaf"] == 657
    assert stacks(p)["hot", "other"] == 191
    kernel = [f for f in p.frames if f.kernel]
    assert {f.function for f in kernel} >= {"entry_SYSCALL_64_after_hwframe", "arch_vma_name"}
    assert not any(f.function.endswith("]") for f in p.frames)


def test_inferno_and_flamegraph_variants(tmp_path: Path) -> None:
    path = tmp_path / "variants.txt"
    path.write_text(
        "# comment line\n"
        "\n"
        "prog;main;std::vector<int>::push_back(int const&) 3\n"
        "prog;main;inlined_[i];leaf 2\n"
        "prog;libc.so.6`malloc 4\n"
        "prog;syscall;do_sys_open[k] 1\n"
        "prog;main 5 7\n"  # differential: before, after
        "prog;main;fractional 0.5\n"
    )
    p = folded.read(path)
    got = stacks(p)
    assert got["prog", "main", "std::vector<int>::push_back(int const&)"] == 3
    assert got["prog", "main"] == 7
    assert got["prog", "main", "fractional"] == 0.5
    frames = {f.function: f for f in p.frames}
    assert frames["inlined"].inlined and not frames["leaf"].inlined
    assert frames["malloc"].dso == "libc.so.6"
    assert frames["do_sys_open"].kernel


def test_bad_line_is_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.folded"
    path.write_text("a;b 3\na;b;c three\n")
    assert folded.read(path).meta["warnings"] == [
        "bad.folded: skipped 1 line(s) that are not `frame;frame;... count` (line 2)"
    ]
    path.write_text("a;b;c three\n")
    with pytest.raises(UserError, match=r"^bad.folded:1: expected `frame;frame;\.\.\. count`"):
        folded.read(path)


def test_write_is_root_first_sorted_and_merges_threads() -> None:
    b = ProfileBuilder(unit="ns")
    main, work = Frame("main"), Frame("work")
    inline = Frame("helper", inlined=True)
    b.add([work, main], 10.0, thread=Thread(1))
    b.add([work, main], 5.0, thread=Thread(2))
    b.add([inline, work, main], 2.5)
    b.add([Frame("do_syscall_64", kernel=True), main], 1.0)
    b.add([Frame("a;b"), main], 4.0)
    assert write_text(b.build()) == (
        "main;a:b 4\nmain;do_syscall_64_[k] 1\nmain;work 15\nmain;work;helper_[i] 2.5\n"
    )


def test_round_trip_keeps_stacks_and_flags(tmp_path: Path) -> None:
    p = folded.read(HOT)
    path = tmp_path / "again.folded"
    path.write_text(write_text(p))
    q = folded.read(path)
    assert stacks(q) == stacks(p)
    assert {f for f in q.frames if f.kernel} == {f for f in p.frames if f.kernel}
    assert path.read_text() == "".join(sorted(HOT.read_text().splitlines(keepends=True)))


def test_sniff() -> None:
    assert folded.sniff(HOT.read_bytes())
    assert folded.sniff(b"a;b 1\na;c 2\na;partial line cut by the he")
    assert not folded.sniff(b"")
    assert not folded.sniff(b"# callgrind format\nevents: Ir\nfn=main\n")
    assert not folded.sniff(b"hot 15468   650.173724:    1001001 cpu-clock:ppp: \n\t 1165 leaf\n")
    assert not folded.sniff(b"\x1f\x8b\x08\x00binary")


def test_a_ghc_report_is_not_taken_for_folded_stacks() -> None:
    """GHC's `+RTS -p` report: most lines end in two numbers, like differential stacks."""
    ghc = FIXTURES / "readers" / "ghc-objects-arrows.prof"
    assert not folded.sniff(ghc.read_bytes())
    with pytest.raises(UserError, match=r"ghc-objects-arrows.prof:1: a GHC profiling report"):
        folded.read(ghc)


def test_a_weight_written_with_a_trailing_point_counts(tmp_path: Path) -> None:
    path = tmp_path / "points.folded"
    path.write_text("main;a 6.\nmain;b 2.5\n")
    assert stacks(folded.read(path)) == {("main", "a"): 6.0, ("main", "b"): 2.5}
