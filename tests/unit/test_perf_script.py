"""formats.perf_script on real `perf script` output captured with perf 6.1.

Fixtures (tests/fixtures/perf_script/) were recorded from tests/fixtures/perf_prog.c:
  fp.txt           perf record -F 500 -g            ; perf script
  dwarf.txt        perf record --call-graph dwarf   ; perf script   (has "(inlined)" lines)
  nocallchain.txt  perf record -F 500               ; perf script
  fields.txt       perf record -g --sample-cpu      ; perf script -F comm,pid,tid,cpu,...
Expected percentages are what `perf report --stdio --sort sym` printed for the same files.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.formats import perf_script
from perfsleuth.model.profile import Profile

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "perf_script"


def load(name: str) -> Profile:
    # resymbolize=False: keep perf's names, independent of what is installed here
    return perf_script.read(FIX / name, resymbolize=False)


def self_pct(p: Profile) -> dict[str, float]:
    c: Counter[str] = Counter()
    for stack, w, _n, _t, _s in p.rows():
        leaf = next(p.frames[f] for f in stack if not p.frames[f].inlined)
        c[leaf.function] += w
    return {k: round(100 * v / p.total, 2) for k, v in c.items()}


def total_pct(p: Profile) -> dict[str, float]:
    c: Counter[str] = Counter()
    for stack, w, _n, _t, _s in p.rows():
        for name in {p.frames[f].function for f in stack if not p.frames[f].inlined}:
            c[name] += w
    return {k: round(100 * v / p.total, 2) for k, v in c.items()}


def test_frame_pointer_callchains_match_perf_report() -> None:
    p = load("fp.txt")
    assert p.unit == "ns"
    assert p.num_samples == 68
    assert p.total == 136_000_000
    assert self_pct(p) == {"heavy_leaf": 85.29, "light_leaf": 13.24, "exc_page_fault": 1.47}
    tot = total_pct(p)
    assert tot["main"] == pytest.approx(98.53)
    assert tot["__libc_start_call_main"] == pytest.approx(98.53)
    assert tot["asm_exc_page_fault"] == pytest.approx(1.47)
    assert p.meta["event"] == "cpu-clock:ppp"


def test_leaf_first_and_kernel_frames() -> None:
    p = load("fp.txt")
    kernel = [f for f in p.frames if f.kernel]
    assert {f.function for f in kernel} >= {"exc_page_fault", "asm_exc_page_fault"}
    assert all(f.dso == "[kernel.kallsyms]" for f in kernel)
    heavy = next(s for s, *_ in p.rows() if p.frames[s[0]].function == "heavy_leaf")
    names = [p.frames[f].function for f in heavy]
    assert names[:2] == ["heavy_leaf", "main"]
    assert p.frames[heavy[0]].dso == "prog"
    libc = [f for f in p.frames if f.dso == "libc.so.6"]
    assert libc


def test_dwarf_output_keeps_perf_inlined_frames() -> None:
    p = load("dwarf.txt")
    assert self_pct(p) == {"heavy_leaf": 82.5, "light_leaf": 17.5}
    inlined = {(f.function, f.dso) for f in p.frames if f.inlined}
    assert ("mix", "prog") in inlined
    # an inlined frame sits directly above (leaf side of) its physical caller
    for stack, *_ in p.rows():
        for i, f in enumerate(stack[:-1]):
            if p.frames[f].inlined and p.frames[f].function == "mix":
                assert p.frames[stack[i + 1]].function in ("heavy_leaf", "light_leaf")


def test_without_callchains() -> None:
    p = load("nocallchain.txt")
    assert self_pct(p) == {"heavy_leaf": 82.35, "light_leaf": 17.65}
    assert all(len(s) == 1 for s, *_ in p.rows())


def test_explicit_fields_with_pid_tid_and_cpu() -> None:
    p = load("fields.txt")
    assert self_pct(p) == {"heavy_leaf": 85.29, "light_leaf": 14.71}
    assert [(t.pid, t.tid, t.name) for t in p.threads] == [(22072, 22072, "prog")]


def test_aggregates_identical_stacks() -> None:
    p = load("fp.txt")
    assert sum(p.sample_count) == 68
    assert len(p.sample_stack) < 68  # aggregated rows, not one per sample


def test_synthetic_layouts() -> None:
    text = (
        "Web Content  1234/1240 [003]  10.000001:      250 cycles:u: \n"
        "\t    7f0000001234 std::vector<int, std::allocator<int> >::push_back(int const&)+0x14 "
        "(/nonexistent/libxul.so)\n"
        "\t    7f0000002000 [unknown] (/nonexistent/libxul.so)\n"
        "\n"
        "Web Content  1234/1240 [003]  10.000002:      750 cycles:u: \n"
        "\t    7f0000001234 std::vector<int, std::allocator<int> >::push_back(int const&)+0x14 "
        "(/nonexistent/libxul.so)\n"
        "\t    7f0000002000 [unknown] (/nonexistent/libxul.so)\n"
    )
    p = perf_script.read_text(text)
    assert p.unit == "events"
    assert p.total == 1000
    assert p.threads[0].name == "Web Content"
    assert (p.threads[0].pid, p.threads[0].tid) == (1234, 1240)
    (stack,) = p.stacks
    leaf = p.frames[stack[0]]
    assert leaf.function == "std::vector<int, std::allocator<int> >::push_back(int const&)"
    assert leaf.dso == "libxul.so"
    assert p.frames[stack[1]].function == "[unknown]"


def test_samples_without_period_count_samples() -> None:
    text = "prog 42 1.000: cpu-clock: \n\t  1000 main+0x1 (/nonexistent/prog)\n\n"
    p = perf_script.read_text(text)
    assert p.unit == "samples"
    assert p.total == 1


def test_sniff() -> None:
    for name in ("fp.txt", "dwarf.txt", "nocallchain.txt", "fields.txt"):
        assert perf_script.sniff((FIX / name).read_bytes()[:4096])
    assert not perf_script.sniff(b"main;foo;bar 12\nmain;baz 3\n")
    assert not perf_script.sniff(b"PERFILE2\x00\x00\x00")
    assert not perf_script.sniff(b"")
    assert not perf_script.sniff(b"events: Ir\nfn=main\n")


def test_bad_input(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(UserError, match="empty"):
        perf_script.read(empty)
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("hello world\nthis is not perf\n")
    with pytest.raises(UserError, match="not `perf script` output"):
        perf_script.read(garbage)
    with pytest.raises(UserError, match="cannot read"):
        perf_script.read(tmp_path / "missing.txt")


def test_stream_and_line_iterables_agree() -> None:
    for name in ("fp.txt", "dwarf.txt", "nocallchain.txt", "fields.txt"):
        text = (FIX / name).read_text()
        a = perf_script.read_text(text, resymbolize=False)
        b = perf_script.build(text.splitlines(keepends=True), resymbolize=False)
        assert sorted(a.rows()) == sorted(b.rows()) and a.frames == b.frames, name


def test_header_comments_are_skipped() -> None:
    text = "# ========\n# captured on    : x\n# ========\n#\n" + (FIX / "fp.txt").read_text()
    assert self_pct(perf_script.read_text(text, resymbolize=False)) == self_pct(load("fp.txt"))
