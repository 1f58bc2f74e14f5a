"""`perfsleuth lint` over small real codebases: compile databases as meson and bear
write them, read as compilers read them, and run through clang for real."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CODEBASES = Path(__file__).resolve().parents[1] / "fixtures" / "codebases"


def lint(*args: str, cwd: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "lint", *args, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def meson_style(root: Path) -> list[dict]:
    """meson: a build folder, a `command` string, paths relative to the build folder."""
    build = root / "build"
    build.mkdir()
    command = "cc -Isrc/libbuf.a.p -I../include -O2 -o src/fill.c.o -c ../src/fill.c"
    return [{"directory": str(build), "command": command, "file": "../src/fill.c"}]


def bear_style(root: Path) -> list[dict]:
    """bear: `arguments`, an absolute file, flags in a response file read from the
    folder the compiler ran in."""
    (root / "flags.rsp").write_text("-I include -O2\n")
    arguments = ["/usr/bin/cc", "@flags.rsp", "-c", "-o", "fill.o", "src/fill.c"]
    file = str(root / "src" / "fill.c")
    return [{"directory": str(root), "arguments": arguments, "file": file, "output": "fill.o"}]


@pytest.mark.parametrize("database", [meson_style, bear_style])
def test_relative_include_paths_of_a_compile_database_reach_the_header(
    tmp_path: Path, database
) -> None:
    root = tmp_path / "project"
    shutil.copytree(CODEBASES / "relative_includes", root)
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps(database(root)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    doc = lint("--compile-commands", str(db), cwd=elsewhere)
    assert doc["notes"] == []
    [finding] = [f for f in doc["findings"] if f["kind"] == "aliasing-write"]
    assert finding["function"] == "buf_fill"
    assert Path(finding["file"]).name == "fill.c"
