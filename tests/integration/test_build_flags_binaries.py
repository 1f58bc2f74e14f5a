"""Build flags from real binaries: GCC's producer string and clang's machine code."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.analyzers.build_flags import STACK_SLOT_RATIO, compile_units, stack_slot_ratio

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
    for (int i = 0; i < 150000000; ++i) total += (unsigned)mix(i + argc);
    return total == 42u;  // 0: perfsleuth run exits with the program's status
}
"""
CALLEE = "int mix(int x) { return (int)(((unsigned)x * 2654435761u) >> 7); }\n"


def two_units(tmp_path: Path, *flags: str) -> Path:
    """A hot loop in main.c calling a one-line function of util.c."""
    (tmp_path / "main.c").write_text(CALLER)
    (tmp_path / "util.c").write_text(CALLEE)
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
    assert hint["gain_low"] < hint["estimated_gain"] < hint["gain_high"] <= hint["share"]
    assert "not inlined" in hint["gain_basis"]


def test_an_lto_build_is_not_told_to_use_lto(tmp_path: Path) -> None:
    binary = two_units(tmp_path, "-flto")
    hint = hint_of(binary, tmp_path)
    assert hint is None or "-flto" not in hint["title"]
    plain = compile_units(str(two_units(tmp_path)))
    assert all("GIMPLE" not in u.producer for u in plain)
    assert any("GIMPLE" in u.producer for u in compile_units(str(binary)))
