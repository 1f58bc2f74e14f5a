"""The pprof reader (formats/) and writer (present/) against Go's own `go tool pprof`."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from perfsleuth.formats import pprof
from perfsleuth.model.profile import Profile
from perfsleuth.present.pprof import encode

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not shutil.which("go"), reason="Go is not installed (needed for pprof)"),
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOP_ROW = re.compile(
    r"^\s*(\d+)(?:ns)?\s+[\d.]+%\s+[\d.]+%\s+(\d+)(?:ns)?\s+[\d.]+%\s+(.*?)(?: \(inline\))?$"
)


def go_top(path: Path) -> dict[str, tuple[int, int]]:
    """flat and cum nanoseconds per function, as `go tool pprof -top` prints them."""
    out = subprocess.run(
        ["go", "tool", "pprof", "-top", "-unit=ns", "-nodecount=100000", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {m[3]: (int(m[1]), int(m[2])) for ln in out.splitlines() if (m := TOP_ROW.match(ln))}
    assert len(rows) > 3, out
    return rows


def ours(p: Profile) -> dict[str, tuple[int, int]]:
    flat: dict[str, float] = defaultdict(float)
    cum: dict[str, float] = defaultdict(float)
    for stack, weight, *_ in p.rows():
        flat[p.frames[stack[0]].function] += weight
        for name in {p.frames[f].function for f in stack}:
            cum[name] += weight
    return {name: (round(flat[name]), round(cum[name])) for name in cum}


def test_reader_agrees_with_go_tool_pprof() -> None:
    path = FIXTURES / "go-cpu.pb.gz"
    assert ours(pprof.read(path)) == go_top(path)


def test_go_tool_pprof_reads_what_we_write(tmp_path: Path) -> None:
    path = FIXTURES / "go-cpu.pb.gz"
    out = tmp_path / "rewritten.pb.gz"
    out.write_bytes(encode(pprof.read(path)))
    assert go_top(out) == go_top(path)


def test_fresh_go_profile(tmp_path: Path) -> None:
    src = FIXTURES / "src" / "gobench"
    work = tmp_path / "gobench"
    shutil.copytree(src, work)
    profile = tmp_path / "cpu.pb.gz"
    subprocess.run(
        ["go", "test", "-run=NONE", "-bench=.", "-benchtime=200ms", f"-cpuprofile={profile}"],
        cwd=work,
        check=True,
        capture_output=True,
    )
    assert ours(pprof.read(profile)) == go_top(profile)
