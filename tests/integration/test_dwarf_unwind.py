"""DWARF unwinding of programs without frame pointers reaches main, as perf's does.

Each fixture in tests/fixtures/unwind/ spends its time in `build`, called from
`main`. Recorded with `perf record --call-graph dwarf`, nearly every sample in
`build` must have `main` (or `_start`) further up its stack, both in our
import and in `perf script`. The Rust program and the C one linked with lld
(rustc's bundled copy) are the regression cases: lld starts the executable
segment mid-page, so the segment holding a mapping's page-aligned file offset
is the read-only one before it, and for the small C program that one even
shares more bytes with the mapping than the executable segment does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perfsleuth.formats import perf_data
from perfsleuth.model.profile import Profile

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "unwind"
RUSTC = shutil.which("rustc") or shutil.which(os.path.expanduser("~/.cargo/bin/rustc"))
CXX = shutil.which("g++") or shutil.which("clang++-16")
ROOTS = ("main", "_start")
# hot::build, build, build(unsigned long), build[abi:cxx11](unsigned long)
BUILD = re.compile(r"(^|::)build($|[(<\[])")


def _lld_dir() -> str:
    """rustc's bundled lld, as a directory for `gcc -B DIR -fuse-ld=lld`."""
    if RUSTC is None:
        pytest.skip("rustc not installed")
    sysroot = subprocess.run(
        [RUSTC, "--print", "sysroot"], capture_output=True, text=True, check=True
    ).stdout.strip()
    gcc_ld = Path(sysroot) / "lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld"
    if not (gcc_ld / "ld.lld").exists():
        pytest.skip("rustc ships no lld")
    return str(gcc_ld)


def _compile(kind: str, exe: Path) -> None:
    if kind == "rust":
        if RUSTC is None:
            pytest.skip("rustc not installed")
        cmd = [RUSTC, "-C", "opt-level=2", "-g", "-o", str(exe), str(FIXTURES / "hot.rs")]
    elif kind == "c-lld":
        src = str(FIXTURES / "tiny.c")
        flags = ["-O2", "-g", "-fomit-frame-pointer", "-fuse-ld=lld", "-B", _lld_dir()]
        cmd = ["gcc", *flags, "-o", str(exe), src]
    else:
        if CXX is None:
            pytest.skip("no C++ compiler")
        cmd = [CXX, "-O2", "-g", "-fomit-frame-pointer", "-o", str(exe), str(FIXTURES / "hot.cpp")]
    subprocess.run(cmd, check=True, cwd=exe.parent)


@pytest.fixture(scope="module", params=["rust", "cpp", "c-lld"])
def recording(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("perf") is None:
        pytest.skip("perf missing")
    work = tmp_path_factory.mktemp(f"unwind-{request.param}")
    exe = work / "hot"
    _compile(request.param, exe)
    data = work / "perf.data"
    r = subprocess.run(
        ["perf", "record", "-q", "--call-graph", "dwarf", "-F", "999", "-o", str(data), str(exe)],
        capture_output=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(f"perf record not permitted: {r.stderr.decode(errors='replace')[:200]}")
    return data


def _is_build(name: str) -> bool:
    return BUILD.search(name) is not None


def _rooted_share(stacks: list[list[str]]) -> tuple[float, int]:
    """Share of the stacks through `build` that also contain main or _start."""
    in_build = [s for s in stacks if any(_is_build(f) for f in s)]
    rooted = [s for s in in_build if any(f in ROOTS for f in s)]
    return len(rooted) / max(len(in_build), 1), len(in_build)


def _our_stacks(p: Profile) -> list[list[str]]:
    out = []
    for stack, _w, count, _t, _s in p.rows():
        names = [p.frames[f].function for f in stack]
        out.extend([names] * count)
    return out


def _perf_script_stacks(data: Path) -> list[list[str]]:
    text = subprocess.run(
        ["perf", "script", "-F", "ip,sym", "-i", str(data)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stacks = []
    for block in text.split("\n\n"):
        names = [line.split(None, 1)[1] for line in block.splitlines() if len(line.split()) > 1]
        stacks.append([n.split("+0x")[0] for n in names])
    return stacks


def test_dwarf_unwinding_reaches_main_like_perf(recording: Path) -> None:
    if not perf_data.native_available():
        pytest.skip("perfsleuth_native not built (make native)")
    p = perf_data.read(recording)
    ours, n = _rooted_share(_our_stacks(p))
    perfs, perf_n = _rooted_share(_perf_script_stacks(recording))
    assert n > 100 and perf_n > 100
    assert perfs >= 0.95, f"perf script itself reaches main in only {perfs:.1%}"
    assert ours >= 0.95, f"only {ours:.1%} of {n} samples in build reach main"
