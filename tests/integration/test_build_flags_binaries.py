"""Build flags from real binaries: GCC's producer string and clang's machine code."""

from __future__ import annotations

import shutil
import subprocess
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
