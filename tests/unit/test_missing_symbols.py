"""Missing symbols and broken stacks on hand-built profiles."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, missing_symbols
from perfsleuth.binaries import elf_info
from perfsleuth.formats import pprof
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.model.run import RunInfo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "entry"

START = Frame("_start", "app")
MAIN = Frame("main", "app", "/src/app.c", 3)
UNKNOWN = Frame("[unknown]", "libfoo.so.1")


def analyze(
    samples: list[tuple[list[Frame], float]], binaries: list[dict] | None = None, call_graph="fp"
) -> dict:
    builder = ProfileBuilder()
    for frames, weight in samples:
        builder.add(frames, weight)
    run = RunInfo(meta={"call_graph": call_graph})
    ctx = Context(profile=builder.build(), run=run, binaries=binaries or [])
    return {f.rule: f for f in missing_symbols.analyze(ctx)}


def test_unknown_functions_are_reported_per_dso() -> None:
    found = analyze([([Frame("[unknown]", "app"), MAIN, START], 40), ([MAIN, START], 60)])
    missing = found["symbols.missing"]
    assert missing.share == 0.4 and missing.confidence >= 0.9
    assert missing.dso == "app"
    assert "app: 40.0%" in missing.evidence[0]
    assert "-g" in missing.suggestion


def test_a_hot_nameless_library_does_not_blind_the_ranking() -> None:
    """hot_library names and sizes libfoo by its file: its nameless frames hide only which
    of its functions run, so the finding stays a low-confidence line, not the first one."""
    found = analyze([([UNKNOWN, MAIN, START], 40), ([MAIN, START], 60)])
    missing = found["symbols.missing"]
    assert missing.share == 0.4 and missing.details["blind_share"] == 0.0
    assert missing.confidence < 0.5


def test_broken_stacks_suggest_dwarf_unwinding_after_fp() -> None:
    found = analyze([([Frame("helper", "app")], 50), ([MAIN, START], 50)])
    broken = found["symbols.broken-stacks"]
    assert broken.share == 0.5
    assert "--call-graph dwarf" in broken.suggestion


def test_a_well_symbolized_profile_has_no_finding() -> None:
    assert analyze([([MAIN, START], 100)]) == {}


def test_callgrind_stacks_are_never_called_broken():
    b = ProfileBuilder(unit="instructions", meta={"format": "callgrind"})
    b.add([Frame("work", "/bin/prog"), Frame("0x0000000000001080", "/bin/prog")], 100)
    ctx = Context(profile=b.build(), run=RunInfo(mode="count"))
    assert not [f for f in missing_symbols.analyze(ctx) if "stop before" in f.title]


def _entry_of(path: str) -> int:
    info = elf_info(path)
    assert info is not None and info.entry
    return info.entry


def test_rust_and_cpp_entry_chains_are_entries() -> None:
    rust_main = [Frame("count", "rg"), Frame("rg::main", "rg")]
    rust_short = [Frame("count", "rg"), Frame("std::sys::backtrace::__rust_begin_short_backtrace")]
    rust_thread = [Frame("count"), Frame("std::sys::pal::unix::thread::Thread::new::thread_start")]
    cpp_thread = [Frame("work", "app"), Frame("execute_native_thread_routine", "libstdc++.so.6")]
    lang_start = [Frame("f"), Frame("std::rt::lang_start_internal")]
    loader = [Frame("_dl_relocate_object", "ld-linux-x86-64.so.2")]
    for stack in (rust_main, rust_short, rust_thread, cpp_thread, lang_start, loader):
        assert analyze([(stack, 100)]) == {}, stack


def test_a_stripped_start_at_the_elf_entry_is_an_entry() -> None:
    exe = os.path.realpath(sys.executable)
    name = os.path.basename(exe)
    entry = _entry_of(exe)
    start = Frame(f"[unknown] {name}+{entry:#x}", name)
    elsewhere = Frame(f"[unknown] {name}+{entry + 0x1000:#x}", name)
    work = Frame("work", "liblzma.so.5")
    binaries = [{"path": exe}]
    assert analyze([([work, start], 100)], binaries=binaries) == {}
    found = analyze([([work, elsewhere], 100)], binaries=binaries)
    assert found["symbols.broken-stacks"].share == 1.0


def test_stacks_cut_by_the_dwarf_stack_copy_are_said_so_with_low_confidence() -> None:
    found = analyze([([Frame("helper", "app")], 100)], call_graph="dwarf")
    broken = found["symbols.broken-stacks"]
    assert "8 KB stack copy" in broken.title
    assert broken.confidence < 0.6


@pytest.mark.parametrize("name", ["xz", "wordfreq"])
def test_captured_real_stacks_reach_their_entries(name: str) -> None:
    """xz -6 -T1 (Debian, stripped) and examples/rust/wordfreq (rustc -O, no frame
    pointers), recorded with `perfsleuth record` (DWARF) and exported with
    `perfsleuth export --pprof`: every stack reaches __libc_start_call_main, the
    unnamed _start, clone3 or wordfreq::main; the old check called 100% and 53.9%
    of them broken."""
    profile = pprof.read(FIXTURES / f"{name}.pb.gz")
    ctx = Context(profile=profile, run=RunInfo(meta={"call_graph": "dwarf"}))
    assert "symbols.broken-stacks" not in {f.rule for f in missing_symbols.analyze(ctx)}


def test_captured_bzip2_stacks_deeper_than_the_stack_copy_are_not_a_confident_alarm() -> None:
    """Debian's bzip2 keeps ~10 KB of buffers on its stack: perf's 8 KB copy stops
    71% of its stacks in bzip2's own code, before main (perf script agrees)."""
    profile = pprof.read(FIXTURES / "bzip2.pb.gz")
    ctx = Context(profile=profile, run=RunInfo(meta={"call_graph": "dwarf"}))
    found = {f.rule: f for f in missing_symbols.analyze(ctx)}
    assert found["symbols.broken-stacks"].confidence < 0.6


@pytest.mark.parametrize("dso", ["//anon", "anon"])
def test_jit_code_is_named_as_such_and_never_asks_for_g(dso: str) -> None:
    """PCRE2's JIT region: anonymous executable memory that no debug info can name. A
    perf.data's //anon is stored by its file name, anon: javac's JIT code was told
    "anon: rebuild with -g"."""
    jit = Frame("[unknown]", dso)
    found = analyze([([jit, MAIN, START], 60), ([MAIN, START], 40)])
    assert set(found) == {"symbols.generated-code"}
    generated = found["symbols.generated-code"]
    assert "JIT" in generated.title and "-g" not in generated.suggestion.replace("no -g", "")
    assert generated.confidence < 0.6 and generated.details["blind_share"] == 0.0


def test_a_lost_mapping_is_a_recording_problem_said_once() -> None:
    lost = Frame("[unknown]", "[unknown]")
    found = analyze([([lost, MAIN, START], 30), ([UNKNOWN, MAIN, START], 30), ([MAIN], 40)])
    missing = found["symbols.missing"]
    assert missing.dso == "libfoo.so.1" and missing.share == pytest.approx(0.3)
    lines = [e for e in missing.evidence if "mapping the recording lost" in e]
    assert len(lines) == 1 and lines[0].startswith("30.0%")


def test_few_missing_names_are_one_line_under_the_findings() -> None:
    found = analyze([([UNKNOWN, MAIN, START], 8), ([MAIN, START], 92)])
    missing = found["symbols.missing"]
    assert missing.confidence < 0.6 and missing.details["blind_share"] == pytest.approx(0.08)


def test_a_count_runs_whole_path_dsos_get_their_own_fix(tmp_path: Path) -> None:
    """A count run names DSOs by whole path: looked up by file name, a stripped binary
    was told "rebuild with -g" and the loader's 0.0% asked for a -dbgsym; valgrind's
    "???" got a fix too, and the shares were "of samples" of a run that has none."""
    stripped = tmp_path / "bzs"
    stripped.write_bytes(Path("/bin/true").read_bytes())
    info = elf_info(str(stripped))
    assert info is not None and not info.has_symbols
    builder = ProfileBuilder(unit="instructions")
    builder.add([Frame("0x0000000000003b60", str(stripped))], 998)
    loader = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    builder.add([Frame("0x000000000001ab70", loader)], 1)
    builder.add([Frame("0x0000000004000000", "???")], 1)
    ctx = Context(profile=builder.build(), run=RunInfo(), binaries=[{"path": str(stripped)}])
    (missing,) = [f for f in missing_symbols.analyze(ctx) if f.rule == "symbols.missing"]
    assert missing.title.startswith("100.0% of the instructions have no function name")
    fix = f"{stripped}: stripped; rebuild or relink without -s / strip, and with -g"
    assert missing.fix["steps"] == [fix]


def test_captured_off_cpu_stacks_cut_in_libstdcxx_are_not_blamed_on_the_stack_copy() -> None:
    """bench/fresh_waits/futpool.cc recorded with `record --mode all` (perf's DWARF
    stacks on the CPU, eBPF's frame-pointer walks off it) and exported with `perfsleuth
    export --pprof`: 59% of the time's stacks stop in libstdc++'s futex wait and libc's
    join, all of them off the CPU; the finding said they were deeper than perf's 8 KB
    stack copy and to record with --call-graph fp."""
    profile = pprof.read(FIXTURES / "futpool-all.pb.gz")
    ctx = Context(profile=profile, run=RunInfo(meta={"call_graph": "dwarf"}))
    broken = {f.rule: f for f in missing_symbols.analyze(ctx)}["symbols.broken-stacks"]
    assert "eBPF follows frame pointers" in broken.title and "8 KB" not in broken.title
    assert "--mode wall" in broken.suggestion and "--call-graph" not in broken.suggestion
