"""Build flags from real binaries: GCC's producer string and clang's machine code."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, build_flags
from perfsleuth.analyzers.build_flags import (
    INLINABLE_BYTES,
    LARGE_CALLEE_SAVING,
    PGO_SAVING,
    STACK_SLOT_RATIO,
    compile_units,
    stack_slot_ratio,
)
from perfsleuth.binaries import binary_at
from perfsleuth.collect.run_facts import new_run
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.static_analysis.code_shape import cpu_flags

pytestmark = pytest.mark.integration
SOURCE = Path(__file__).resolve().parents[2] / "examples" / "advisor" / "o0_build.c"


def compile_with(compiler: str, level: str, out: Path) -> Path:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed (make setup installs it)")
    subprocess.run([compiler, level, "-g", "-o", str(out), str(SOURCE)], check=True)
    return out


@pytest.mark.parametrize("compiler", ["gcc", "clang-16"])
def test_stack_slot_traffic_tells_o0_from_o2(compiler: str, tmp_path: Path) -> None:
    slow = compile_with(compiler, "-O0", tmp_path / "slow")
    fast = compile_with(compiler, "-O2", tmp_path / "fast")
    slow_ratio = stack_slot_ratio(str(slow), "main")
    fast_ratio = stack_slot_ratio(str(fast), "main")
    assert slow_ratio is not None and slow_ratio >= STACK_SLOT_RATIO
    assert fast_ratio is not None and fast_ratio < STACK_SLOT_RATIO


def test_gcc_producer_records_the_level(tmp_path: Path) -> None:
    binary = compile_with("gcc", "-O0", tmp_path / "o0")
    units = compile_units(str(binary))
    assert [u.optimization for u in units if u.path.endswith("o0_build.c")] == ["0"]


def test_clang_producer_is_silent(tmp_path: Path) -> None:
    binary = compile_with("clang-16", "-O0", tmp_path / "o0")
    assert {u.optimization for u in compile_units(str(binary))} == {None}


CALLER = """
int mix(int x);
int main(int argc, char **argv) {
    (void)argv;
    unsigned total = 0;
    for (int i = 0; i < ROUNDS; ++i) total += (unsigned)mix(i + argc);
    return total == 42u;  // 0: perfsleuth run exits with the program's status
}
"""
CALLEE = "int mix(int x) { return (int)(((unsigned)x * 2654435761u) >> 7); }\n"


# The same call into a function too large for GCC to inline (166 bytes at -O2).
LARGE_CALLEE = """
int mix(int x) {
    unsigned h = (unsigned)x, g = h * 31u;
    for (int r = 0; r < 24; ++r) {
        h ^= h >> 13; h *= 0x5bd1e995u; h ^= h << 7;
        if (h & 1u) h += 0x9e3779b9u; else h -= 0x7f4a7c15u;
        h = (h << 5) | (h >> 27);
    }
    for (int r = 0; r < 24; ++r) {
        g += h ^ (g >> 3); g *= 0x85ebca6bu; g ^= g >> 16;
        if (g & 2u) g ^= 0xc2b2ae35u; else g += h;
        g = (g >> 11) | (g << 21);
    }
    switch (g & 3u) {
    case 0: return (int)(h ^ g);
    case 1: return (int)(h + g * 3u);
    case 2: return (int)(h - (g >> 2));
    default: return (int)((h << 1) ^ (g << 9));
    }
}
"""


def two_units(tmp_path: Path, *flags: str, callee: str = CALLEE, rounds: int = 150_000_000) -> Path:
    """A hot loop in main.c calling a one-line function of util.c (or `callee`)."""
    (tmp_path / "main.c").write_text(CALLER.replace("ROUNDS", str(rounds)))
    (tmp_path / "util.c").write_text(callee)
    out = tmp_path / ("lto" if "-flto" in flags else "plain")
    subprocess.run(
        ["gcc", "-O2", "-g", *flags, "-o", str(out), str(tmp_path / "main.c"),
         str(tmp_path / "util.c")],
        check=True,
    )  # fmt: skip
    return out


def hint_of(binary: Path, tmp_path: Path) -> dict | None:
    out = tmp_path / f"{binary.name}.json"
    subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "run", "--store", str(tmp_path / "store"),
         "--all", "--format", "json", "-o", str(out), "--", str(binary)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    findings = json.loads(out.read_text())["findings"]
    return next((f for f in findings if f["rule"] == "build.options-hint"), None)


def test_lto_hint_from_hot_calls_between_units(tmp_path: Path) -> None:
    """Without LTO the loop calls util.c's mix every time: the hint names the call and
    takes its estimate from the time under it (the fix measured here: -flto inlines
    and vectorises the loop)."""
    hint = hint_of(two_units(tmp_path), tmp_path)
    assert hint is not None and "-flto" in hint["title"]
    assert any("hot calls between compile units, not inlined: main (main.c) -> mix (util.c)" in e
               for e in hint["evidence"])  # fmt: skip
    assert any(e.startswith(".comment: GCC: ") for e in hint["evidence"])
    assert hint["details"]["cross_unit_share"] > 0.5
    assert hint["details"]["inlinable_share"] > 0.05  # mix is a one-liner: LTO inlines it
    assert hint["gain_low"] < hint["estimated_gain"] < hint["gain_high"] <= hint["share"]
    assert "without being inlined" in hint["gain_basis"]
    # scalar hot code: -march has no vectors to widen, so it is not proposed
    assert "-march" not in hint["title"]
    assert any(e.startswith("PGO: ") and "conditional jumps" in e for e in hint["evidence"])


def test_a_hot_call_into_a_function_too_large_to_inline_is_estimated_lower(
    tmp_path: Path,
) -> None:
    """LTO inlines small functions: a call into a large one mostly stays a call, so the
    time under it is estimated at LARGE_CALLEE_SAVING, not LTO_SAVING (K2's calls into
    inout_t::operator= once made the estimate 21%; -flto measured 9%)."""
    binary = two_units(tmp_path, callee=LARGE_CALLEE, rounds=3_000_000)
    mix = next(s for s in binary_at(str(binary)).symbols(".symtab") if s.name == "mix")
    assert mix.size > INLINABLE_BYTES  # what the test is about
    hint = hint_of(binary, tmp_path)
    assert hint is not None and "-flto" in hint["title"]
    details = hint["details"]
    assert details["inlinable_share"] == 0.0 and details["cross_unit_share"] > 0.5
    assert "-fprofile-use" in hint["title"]  # its part: PGO_SAVING of the binary's time
    expected = details["cross_unit_share"] * LARGE_CALLEE_SAVING + hint["share"] * PGO_SAVING
    assert hint["estimated_gain"] == pytest.approx(expected)
    assert "in larger ones" in hint["gain_basis"]


def test_an_lto_build_is_not_told_to_use_lto(tmp_path: Path) -> None:
    binary = two_units(tmp_path, "-flto")
    hint = hint_of(binary, tmp_path)
    assert hint is None or "-flto" not in hint["title"]
    plain = compile_units(str(two_units(tmp_path)))
    assert all("GIMPLE" not in u.producer for u in plain)
    assert any("GIMPLE" in u.producer for u in compile_units(str(binary)))


# zlib's shape (minigzip: -flto measured no faster; the hint had said 59%): a rare call
# from main.c into a unit whose work runs in its own static function, which itself
# calls into a third unit once every 100,000 iterations of its loop.
RARE_CALLS = {
    "main.c": """
unsigned compress_chunk(unsigned seed);
int main(int argc, char **argv) {
    (void)argv;
    unsigned total = 0;
    for (unsigned r = 0; r < 40; ++r) total += compress_chunk(r + (unsigned)argc);
    return total == 42u;
}
""",
    "deflate.c": """
void flush_block(unsigned *state);
__attribute__((noinline)) static unsigned deflate_slow(unsigned h) {
    unsigned state = 0;
    for (unsigned i = 0; i < 3000000; ++i) {
        h = (h ^ (h >> 11)) * 2654435761u + i;
        if (i % 100000 == 0) flush_block(&state);
    }
    return h + state;
}
unsigned compress_chunk(unsigned seed) { return deflate_slow(seed * 31u) ^ seed; }
""",
    "trees.c": "void flush_block(unsigned *state) { *state += 1; }\n",
}


def test_rare_calls_across_units_are_not_lto_work(tmp_path: Path) -> None:
    """All the time is under calls that cross units, none in them: inlining
    compress_chunk or flush_block would change code that hardly runs, so -flto is not
    proposed (it was, with the whole run under the calls as its share)."""
    for name, text in RARE_CALLS.items():
        (tmp_path / name).write_text(text)
    binary = tmp_path / "rare"
    sources = [str(tmp_path / name) for name in RARE_CALLS]
    subprocess.run(["gcc", "-O2", "-g", "-o", str(binary), *sources], check=True)
    hint = hint_of(binary, tmp_path)
    assert hint is None or "-flto" not in hint["title"], hint


AXPY = """
#define N 4096
float a[N], b[N];
__attribute__((noinline)) void axpy(float *restrict x, const float *restrict y, float k, int n) {
    for (int i = 0; i < n; i++) x[i] += k * y[i];
}
int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < N; i++) { a[i] = (float)i; b[i] = 1.0f / (float)(i + 1); }
    for (int r = 0; r < 600000; r++) axpy(a, b, 1e-7f * (float)argc, N);
    return a[7] == 42.0f;
}
"""


@pytest.mark.skipif("avx2" not in cpu_flags(), reason="the CPU has no vectors wider than SSE")
def test_march_is_proposed_where_the_hot_loop_is_vectorised_at_128_bits(tmp_path: Path) -> None:
    """GCC's x86-64 baseline vectorises the loop with SSE; this CPU has wider vectors:
    -march is proposed with what the code shows. Built for x86-64-v3, it is not."""
    (tmp_path / "axpy.c").write_text(AXPY)
    binaries = {}
    for name, flags in (("baseline", []), ("v3", ["-march=x86-64-v3"])):
        binaries[name] = tmp_path / name
        argv = ["gcc", "-O3", "-g", *flags, "-o", str(binaries[name]), str(tmp_path / "axpy.c")]
        subprocess.run(argv, check=True)
    hint = hint_of(binaries["baseline"], tmp_path)
    assert hint is not None and "-march=native" in hint["title"], hint
    assert any("vectorised at 128 bits" in e for e in hint["evidence"]), hint["evidence"]
    assert "128-bit SIMD" in hint["gain_basis"]
    wide = hint_of(binaries["v3"], tmp_path)
    assert wide is None or "-march" not in wide["title"]


@pytest.mark.parametrize("named_by", ["file name", "whole path"])
def test_an_o0_binary_is_found_as_a_sampled_or_a_count_run_names_it(
    named_by: str, tmp_path: Path
) -> None:
    """perf's frames name a binary by its file name, callgrind's (count runs) by its
    whole path: the -O0 finding comes either way (count runs never had one)."""
    binary = compile_with("gcc", "-O0", tmp_path / "o0")
    dso = binary.name if named_by == "file name" else str(binary)
    builder = ProfileBuilder()
    builder.add([Frame("main", dso=dso, file=str(SOURCE), line=10)], 1000.0)
    ctx = Context(
        profile=builder.build(),
        run=new_run(str(binary), "count"),
        binaries=[{"path": str(binary), "build_id": ""}],
    )
    findings = build_flags.analyze(ctx)
    assert [f.rule for f in findings][:1] == ["build.unoptimized"], findings


# bzip2's shape: the compressor calls another unit's BZ2_compressBlock once per 900 kB
# block, millions of instructions of its own each time (-flto measured 1.00x)
BLOCKS = {
    "main.c": """
unsigned compress_block(unsigned seed);
int main(int argc, char **argv) {
    (void)argv;
    unsigned total = 0;
    for (unsigned b = 0; b < 20; ++b) total += compress_block(b + (unsigned)argc);
    return total == 42u;
}
""",
    "block.c": """
unsigned compress_block(unsigned h) {
    for (unsigned i = 0; i < 200000; ++i) h = (h ^ (h >> 11)) * 2654435761u + i;
    return h;
}
""",
}


def count_hint_of(binary: Path, tmp_path: Path) -> dict | None:
    store = str(tmp_path / f"store-{binary.name}")
    cli = [sys.executable, "-m", "perfsleuth.cli"]
    subprocess.run(
        [*cli, "record", "--store", store, "--mode", "count", "--", str(binary)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    advised = subprocess.run(
        [*cli, "advise", "--store", store, "--all", "--format", "json"],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    findings = json.loads(advised.stdout)["findings"]
    return next((f for f in findings if f["rule"] == "build.options-hint"), None)


def test_a_count_run_leaves_out_calls_doing_much_work_each(tmp_path: Path) -> None:
    """A count run knows each call's count: 20 calls of a million instructions each are
    no inlining's to speed up, so -flto is not proposed for them (it was, from their
    time alone); a one-line callee called in a loop still has it."""
    for name, text in BLOCKS.items():
        (tmp_path / name).write_text(text)
    blocks = tmp_path / "blocks"
    sources = [str(tmp_path / name) for name in BLOCKS]
    subprocess.run(["gcc", "-O2", "-g", "-o", str(blocks), *sources], check=True)
    hint = count_hint_of(blocks, tmp_path)
    assert hint is None or "-flto" not in hint["title"], hint
    looped = count_hint_of(two_units(tmp_path, rounds=2_000_000), tmp_path)
    assert looped is not None and "-flto" in looped["title"], looped
