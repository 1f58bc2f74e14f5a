"""The prologue-overhead analyzer on examples/counts/keys.c, checked against the
saving the split version (-DSPLIT) really makes, both counted by callgrind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, discover, prologue_overhead
from perfsleuth.model.findings import Finding
from perfsleuth.rank import rank
from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def store(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Run 1 counts keys (heavy prologue), run 2 keys-split (fast path + slow path)."""
    path = tmp_path_factory.mktemp("prologue") / "store"
    for program in ("keys", "keys-split"):
        record_count(path, examples_built / program)
    return Store(path)


def record_count(store: Path, program: Path) -> None:
    """`perfsleuth record --mode count` of PROGRAM into the store at STORE."""
    subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "record", "--store", str(store)]
        + ["--mode", "count", "--", str(program)],
        check=True,
        capture_output=True,
    )


def context(store: Store, run_id: int) -> Context:
    run = store.load_run(run_id)
    return Context(profile=run.profile, run=run.info, counts=run.exact(), cache=run.cache)


def ranked_findings(ctx: Context) -> list[Finding]:
    """Every analyzer's findings on the run, in the advisor's order."""
    return rank([f for analyze in discover().values() for f in analyze(ctx)]).shown


def test_finding_ranks_in_top_three(store: Store) -> None:
    top = ranked_findings(context(store, 1))[:3]
    assert [f.function for f in top if f.kind == "prologue-overhead"] == ["keys_equal"]


def test_estimated_saving_is_within_20_percent_of_the_real_one(store: Store) -> None:
    (found,) = [
        f for f in prologue_overhead.analyze(context(store, 1)) if f.function == "keys_equal"
    ]
    before, after = (store.run_info(run).total for run in (1, 2))
    real = before - after
    estimated = found.details["instructions_saved"]
    assert real > 5_000_000
    assert abs(estimated - real) <= 0.2 * real
    assert found.estimated_gain == pytest.approx(estimated / before)


def test_finding_carries_the_evidence_and_the_fix(store: Store) -> None:
    (found,) = [
        f for f in prologue_overhead.analyze(context(store, 1)) if f.function == "keys_equal"
    ]
    assert found.file.endswith("keys.c") and found.line > 0
    assert found.details["entry"][:4] == ["push r13", "push r12", "push rbp", "push rbx"]
    assert found.details["calls"] == 1_000_000
    assert "NOINLINE" in found.suggestion and "__attribute__((noinline))" in found.fix["macro"]
    # keys_equal is called from keys.c alone: the kept fast path may be inlined there
    assert any(e.startswith("all of its calls come from its own file") for e in found.evidence)
    assert found.gain_low == pytest.approx(found.estimated_gain)
    assert found.gain_high > found.estimated_gain


def test_split_version_has_no_finding_for_the_fast_path(store: Store) -> None:
    functions = [f.function for f in prologue_overhead.analyze(context(store, 2))]
    assert "keys_equal" not in functions


def test_runs_without_counts_give_no_finding(store: Store, tmp_path: Path) -> None:
    ctx = context(store, 1)
    ctx.counts = None
    assert prologue_overhead.analyze(ctx) == []


CPP_SOURCE = """
#include <cstdio>
#include <string>
namespace store {
struct Key { const char *text; unsigned hash; };
struct Table {
    __attribute__((noinline)) bool same(const Key &a, const Key &b) const {
        if (&a == &b) return true;
        if (a.hash != b.hash) return false;
        return std::string(a.text) == std::string(b.text);
    }
};
}
int main() {
    static store::Key keys[64];
    static char names[64][16];
    for (int i = 0; i < 64; i++) {
        snprintf(names[i], 16, "key%d", i % 32);
        keys[i] = {names[i], unsigned(i % 32)};
    }
    store::Table table;
    unsigned s = 1, hits = 0;
    for (long i = 0; i < 200000; i++) {
        s = s * 1103515245u + 12345u;
        const store::Key &a = keys[(s >> 16) & 63];
        hits += table.same(a, ((s >> 8) & 15) == 0 ? keys[(s >> 24) & 63] : a);
    }
    printf("%u\\n", hits);
}
"""


def test_cpp_method_is_found_by_its_demangled_name(tmp_path: Path) -> None:
    source, program, path = tmp_path / "same.cc", tmp_path / "same", tmp_path / "store"
    source.write_text(CPP_SOURCE)
    subprocess.run(["g++", "-O2", "-g", "-o", str(program), str(source)], check=True)
    record_count(path, program)
    (found,) = prologue_overhead.analyze(context(Store(path), 1))
    assert found.function.startswith("store::Table::same(store::Key const&")
    assert found.title.startswith("store::Table::same spends")


def test_shape_counts_saves_beyond_the_slow_calls() -> None:
    Instruction = prologue_overhead.Instruction
    code = [
        Instruction(0x10, "push rbx", saves=True, calls_out=False),
        Instruction(0x11, "test rdi, rdi", saves=False, calls_out=False),
        Instruction(0x14, "call 0x99", saves=False, calls_out=True),
        Instruction(0x19, "mov eax, 1", saves=False, calls_out=False),
        Instruction(0x1E, "pop rbx", saves=True, calls_out=False),
    ]
    # the call's own count includes the PLT stub's; its return address says 100
    counts = {0x10: 1000, 0x11: 1000, 0x14: 200, 0x19: 100, 0x1E: 1000}
    shape = prologue_overhead.shape_of(code, counts, calls=1000)
    assert shape.slow_calls == 100
    assert shape.save_restore == 2000
    assert shape.saved == 2 * (1000 - 100) - 100
    assert shape.entry == ["push rbx"]
    assert prologue_overhead.is_heavy_prologue(shape, total=10_000)


def test_calls_from_several_sites_may_come_from_the_same_invocations() -> None:
    """Two call sites of 300 calls each: 300 to 600 of 1,000 invocations call out, so
    that half of them return without calling cannot be shown (an interpreter loop's
    shape: Lua's luaV_execute was reported as '67.1% return without calling anything'
    from its busiest call site alone)."""
    Instruction = prologue_overhead.Instruction
    code = [
        Instruction(0x10, "push rbx", saves=True, calls_out=False),
        Instruction(0x11, "call 0x90", saves=False, calls_out=True),
        Instruction(0x16, "call 0x99", saves=False, calls_out=True),
        Instruction(0x1B, "pop rbx", saves=True, calls_out=False),
    ]
    counts = {0x10: 1000, 0x11: 300, 0x16: 300, 0x1B: 1000}
    shape = prologue_overhead.shape_of(code, counts, calls=1000)
    assert (shape.fewest_slow_calls, shape.slow_calls) == (300, 600)
    assert shape.saved == 2 * (1000 - 600) - 600
    assert not prologue_overhead.is_heavy_prologue(shape, total=10_000)
    counts = {0x10: 1000, 0x11: 100, 0x16: 100, 0x1B: 1000}  # at most 200 call out
    shape = prologue_overhead.shape_of(code, counts, calls=1000)
    assert prologue_overhead.is_heavy_prologue(shape, total=10_000)


def test_a_fast_path_every_call_takes_is_said_so_not_as_at_least_100_percent() -> None:
    """speedtest1 read 'at least 100.0% of its calls return without calling anything'."""
    assert prologue_overhead._returning_share(1000, 1000) == "all 1,000 of its calls"
    assert prologue_overhead._returning_share(999, 1000) == "at least 99.9% of its calls"


def test_leaf_function_saving_registers_for_itself_is_not_reported() -> None:
    Instruction = prologue_overhead.Instruction
    code = [
        Instruction(0x10, "push rbx", saves=True, calls_out=False),
        Instruction(0x11, "add rbx, rdi", saves=False, calls_out=False),
        Instruction(0x14, "pop rbx", saves=True, calls_out=False),
    ]
    shape = prologue_overhead.shape_of(code, {0x10: 5000, 0x11: 5000, 0x14: 5000}, calls=5000)
    assert shape.saved == 10_000
    assert not prologue_overhead.is_heavy_prologue(shape, total=20_000)


def test_a_small_save_share_is_reported_when_the_saving_counts() -> None:
    """13% of a function's instructions are saves (a fixed 15% share missed it), and
    the split saves 0.2% of the run: reported, ranked by what it saves."""
    shape = prologue_overhead.Shape(
        calls=100_000,
        slow_calls=1_000,
        fewest_slow_calls=1_000,
        own=1_500_000,
        save_restore=200_000,
        saved=197_000,
        entry=["push rbx"],
        entry_calls=100_000,
        calls_out=True,
    )
    assert shape.save_restore / shape.own < 0.15
    assert prologue_overhead.is_heavy_prologue(shape, total=100_000_000)
    assert not prologue_overhead.is_heavy_prologue(shape, total=1_000_000_000)


def test_argument_copies_into_saved_registers_are_saved_too() -> None:
    """lz4's LZ4HC_countPattern with a rare trace call (gcc 12 -O2): 3 pushes, 3 pops and
    3 copies of its arguments into those registers a call. The split saved 4,176,963
    instructions of its 464,107 calls, 9 a call; the pushes and pops alone said 6."""
    raw = bytes.fromhex(
        "4154"  # push r12
        "4989f4"  # mov r12, rsi
        "55"  # push rbp
        "4889fd"  # mov rbp, rdi
        "53"  # push rbx
        "89d3"  # mov ebx, edx
        "89d8"  # mov eax, ebx
        "5b"  # pop rbx
        "5d"  # pop rbp
        "415c"  # pop r12
        "c3"  # ret
    )
    code = prologue_overhead.disassemble(raw, 0x18AB0)
    assert [i.text for i in code if i.keeps_argument] == [
        "mov r12, rsi",
        "mov rbp, rdi",
        "mov ebx, edx",
    ]
    calls = 464_107
    code.append(prologue_overhead.Instruction(0x18B00, "call 0x18a00", False, True))
    counts = {i.address: calls for i in code[:-1]}
    shape = prologue_overhead.shape_of(code, counts, calls=calls)
    assert shape.slow_calls == 0
    assert shape.saved == 4_176_963
    assert shape.argument_copies == 3 * calls


def test_the_saves_every_call_runs_after_an_early_test_are_named() -> None:
    """cJSON 1.7.15's `ensure` (gcc 12 -O2) tests its argument before its pushes, as
    counted by callgrind on a JSON printing run: the evidence said "every call starts
    with: (no saves at entry)" beside 6 pushes and pops a call."""
    Instruction = prologue_overhead.Instruction
    code = [
        Instruction(0x1A70, "test rdi, rdi", saves=False, calls_out=False),
        Instruction(0x1A73, "je 0x1b70", saves=False, calls_out=False),
        Instruction(0x1A79, "push r12", saves=True, calls_out=False),
        Instruction(0x1A7B, "push rbp", saves=True, calls_out=False),
        Instruction(0x1A7C, "push rbx", saves=True, calls_out=False),
        Instruction(0x1A7D, "mov rbx, rdi", saves=False, calls_out=False, keeps_argument=True),
        Instruction(0x1AA7, "jae 0x1b00", saves=False, calls_out=False),
        Instruction(0x1AC9, "call rax", saves=False, calls_out=True),
        Instruction(0x1ACB, "mov rbp, rax", saves=False, calls_out=False),
        Instruction(0x1ADE, "pop rbx", saves=True, calls_out=False),
        Instruction(0x1AE2, "pop rbp", saves=True, calls_out=False),
        Instruction(0x1AE3, "pop r12", saves=True, calls_out=False),
        Instruction(0x1B04, "pop rbx", saves=True, calls_out=False),
        Instruction(0x1B05, "pop rbp", saves=True, calls_out=False),
        Instruction(0x1B06, "pop r12", saves=True, calls_out=False),
    ]
    calls = 310_671
    every = (0x1A70, 0x1A73, 0x1A79, 0x1A7B, 0x1A7C, 0x1A7D, 0x1AA7)
    counts = {address: calls for address in every}
    counts |= {0x1AC9: 33, 0x1ACB: 33, 0x1ADE: 33, 0x1AE2: 33, 0x1AE3: 33}
    counts |= {0x1B04: calls - 33, 0x1B05: calls - 33, 0x1B06: calls - 33}
    shape = prologue_overhead.shape_of(code, counts, calls)
    assert shape.entry == ["push r12", "push rbp", "push rbx", "mov rbx, rdi"]
    assert shape.save_restore == 6 * calls and shape.argument_copies == calls
    assert shape.saved == 2_174_334  # the finding's estimate on that run (the split: 2,485,071)


def test_the_saves_most_calls_run_are_named_with_how_many_run_them() -> None:
    """expat 2.5.0's normal_contentTok (gcc 12 -O2), counted by callgrind parsing a 2 MB
    document 3 times: 30 of its 504,771 calls return at its first test (`ptr >= end`),
    the others push 6 registers and keep 4 arguments in them. The evidence said "every
    call runs: (no save on every call)"."""
    raw = bytes.fromhex(
        "4839d6"  # cmp rsi, rdx
        "0f835c0b0000"  # jae 0x15a45
        "4157"
        "4156"
        "4989d6"  # push r15; push r14; mov r14, rdx
        "4155"
        "4989cd"
        "4154"
        "4989f4"  # push r13; mov r13, rcx; push r12; mov r12, rsi
        "55"
        "53"
        "4889fb"
        "4883ec18"  # push rbp; push rbx; mov rbx, rdi; sub rsp, 0x18
    )
    code = prologue_overhead.disassemble(raw, 0x14EE0)
    calls, past_test = 504_771, 504_741
    counts = {i.address: past_test for i in code} | {0x14EE0: calls, 0x14EE3: calls}
    code.append(prologue_overhead.Instruction(0x14FEC, "call qword ptr [rbx + 0x1c0]", False, True))
    code.append(prologue_overhead.Instruction(0x14FF2, "test eax, eax", False, False))
    counts |= {0x14FEC: 25_098, 0x14FF2: 25_098}
    shape = prologue_overhead.shape_of(code, counts, calls)
    saves = ["push r15", "push r14", "mov r14, rdx", "push r13", "mov r13, rcx", "push r12"]
    saves += ["mov r12, rsi", "push rbp", "push rbx", "mov rbx, rdi", "sub rsp, 0x18"]
    assert shape.entry == saves
    assert shape.entry_calls == past_test
    assert prologue_overhead.entry_evidence(shape) == (
        "504,741 of its 504,771 calls run: " + "; ".join(saves)
    )


def test_a_function_whose_only_calls_are_tail_jumps_is_not_reported() -> None:
    """expat 2.5.0's accountingDiffTolerated.part.0 split as the finding on it said (gcc
    12 -O2): its debug report is a NOINLINE function reached by a tail jump, and it still
    pushes rbx for its own arithmetic on every one of its 541,110 calls (callgrind's
    counts). It was reported again: "the split saves about 1,082,220 instructions"."""
    Instruction = prologue_overhead.Instruction
    code = [
        Instruction(0x9430, "mov rax, qword ptr [rdi + 0x380]", saves=False, calls_out=False),
        Instruction(0x94B9, "push rbx", saves=True, calls_out=False),
        Instruction(0x950B, "pop rbx", saves=True, calls_out=False),
        Instruction(0x950C, "ret", saves=False, calls_out=False),
        Instruction(0x9587, "jmp 0x9200", saves=False, calls_out=True),
        Instruction(0x95CA, "pop rbx", saves=True, calls_out=False),
        Instruction(0x95D1, "jmp 0x9200", saves=False, calls_out=True),
    ]
    calls = 541_110
    counts = {0x9430: calls, 0x94B9: calls, 0x950B: calls, 0x950C: calls}
    shape = prologue_overhead.shape_of(code, counts, calls)
    assert shape.save_restore == 2 * calls
    assert not shape.calls_out
    assert not prologue_overhead.is_heavy_prologue(shape, total=452_870_567)
    code[4] = Instruction(0x9587, "call 0x9200", saves=False, calls_out=True)
    assert prologue_overhead.is_heavy_prologue(
        prologue_overhead.shape_of(code, counts, calls), total=452_870_567
    )


def mawk_shape(name: str) -> prologue_overhead.Shape:
    """A function of mawk 1.3.4 (gcc 12 -O2) as counted on bench/count_views.py's run."""
    import json

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "prologue" / "mawk.json"
    found = json.loads(fixture.read_text())["functions"][name]
    code = prologue_overhead.disassemble(bytes.fromhex(found["code"]), found["start"])
    counts = {int(address): n for address, n in found["counts"].items()}
    return prologue_overhead.shape_of(code, counts, counts[found["start"]])


def test_saves_the_fast_path_needs_for_its_own_registers_are_not_counted_as_saved() -> None:
    """mawk's REmatch, its regular-expression machine: 78% of its 875,228 calls return
    without calling, but their loop uses 15 general registers, 6 more than the 9 a
    function may use without saving them, so its 6 pushes serve its own work. It was
    said 'the split saves about 11,528,028 instructions' (1.59% of the run)."""
    shape = mawk_shape("REmatch")
    assert shape.registers == 15
    assert shape.saved == 0
    assert not prologue_overhead.is_heavy_prologue(shape, total=723_118_237)
    cellcpy = mawk_shape("cellcpy")  # rax, rbx, rdx, rsi, rdi: it fits without rbx
    assert cellcpy.registers == 5
    assert cellcpy.saved == 7_351_362


def test_a_binary_rebuilt_since_the_run_is_not_read_and_said(
    examples_built: Path, tmp_path: Path
) -> None:
    """xmllint's run read with the binary replaced by another build (the split one): the
    counts of the run's addresses were looked up in the new code, and the finding was
    left out without a word."""
    program, path = tmp_path / "keys", tmp_path / "store"
    source = Path(__file__).resolve().parents[2] / "examples" / "counts" / "keys.c"
    subprocess.run(["gcc", "-O2", "-g", "-o", str(program), str(source)], check=True)
    record_count(path, program)
    run = Store(path).load_run(1)
    binaries = [b for b in run.info.dsos if b.get("path")]
    ctx = Context(profile=run.profile, run=run.info, counts=run.exact(), binaries=binaries)
    assert prologue_overhead.analyze(ctx) and not ctx.notes
    subprocess.run(["gcc", "-O2", "-g", "-DSPLIT", "-o", str(program), str(source)], check=True)
    ctx = Context(profile=run.profile, run=run.info, counts=run.exact(), binaries=binaries)
    assert prologue_overhead.analyze(ctx) == []
    assert any(f"{program} was rebuilt since the run" in note for note in ctx.notes)
