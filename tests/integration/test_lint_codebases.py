"""`perfsleuth lint` over small real codebases: compile databases as meson and bear
write them, read as compilers read them, and run through clang for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CODEBASES = Path(__file__).resolve().parents[1] / "fixtures" / "codebases"


def lint(*args: str, cwd: Path, cache: Path | None = None) -> dict:
    """lint's JSON document; its unit cache in `cache` (default: the user's)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)} if cache else None
    done = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "lint", *args, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr  # a GCC-only flag of the build is not worth one
    return json.loads(done.stdout)


def cache_entries(cache: Path) -> dict[Path, int]:
    """The unit cache's files and their modification times."""
    return {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}


def meson_style(root: Path) -> list[dict]:
    """meson: a build folder, a `command` string, paths relative to the build folder."""
    build = root / "build"
    build.mkdir()
    command = (
        "cc -Isrc/libbuf.a.p -I../include -O2 -Wduplicated-branches -o fill.o -c ../src/fill.c"
    )
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


def test_a_gcc_build_s_options_clang_refuses_do_not_skip_the_unit(tmp_path: Path) -> None:
    """bitcoin's GCC build passes -fno-extended-identifiers and -fstack-reuse=none, which
    clang's driver refuses: the unit was skipped as one that "does not compile"."""
    root = tmp_path / "project"
    shutil.copytree(CODEBASES / "relative_includes", root)
    [entry] = meson_style(root)
    entry["command"] = entry["command"].replace(
        "-O2", "-O2 -fno-extended-identifiers -fstack-reuse=none"
    )
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([entry]))
    doc = lint("--compile-commands", str(db), cwd=tmp_path, cache=tmp_path / "cache")
    assert doc["notes"] == []
    [finding] = [f for f in doc["findings"] if f["kind"] == "aliasing-write"]
    assert finding["function"] == "buf_fill"


def test_a_second_lint_reads_unchanged_units_back_and_a_changed_header_is_analysed_again(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    shutil.copytree(CODEBASES / "relative_includes", root)
    cache = tmp_path / "cache"
    database = ("--compile-commands", str(tmp_path / "compile_commands.json"))
    (tmp_path / "compile_commands.json").write_text(json.dumps(bear_style(root)))

    first = lint(*database, cwd=tmp_path, cache=cache)
    written = cache_entries(cache)
    assert len(written) == 1
    header = root / "include" / "buf.h"
    header.touch()
    assert lint(*database, cwd=tmp_path, cache=cache) == first
    assert cache_entries(cache) == written  # read back, not written again
    header.write_text(header.read_text().replace("char* data", "int* data"))
    changed = lint(*database, cwd=tmp_path, cache=cache)
    assert [f for f in first["findings"] if f["kind"] == "aliasing-write"]
    assert not [f for f in changed["findings"] if f["kind"] == "aliasing-write"]


def test_a_header_only_its_umbrella_may_include_is_linted_with_its_neighbour_flags(
    tmp_path: Path,
) -> None:
    """Like glib's gstring.h ("Only <glib.h> can be included directly"): the
    database's unit in the same project defines the macro the header checks."""
    root = tmp_path / "project"
    shutil.copytree(CODEBASES / "umbrella", root)
    command = "cc -I../include -DSTRBUF_COMPILATION -O2 -c ../src/strbuf.c -o strbuf.o"
    (root / "build").mkdir()
    entry = {"directory": str(root / "build"), "command": command, "file": "../src/strbuf.c"}
    (tmp_path / "compile_commands.json").write_text(json.dumps([entry]))
    header = root / "include" / "strbuf" / "fill.h"
    doc = lint("--compile-commands", "compile_commands.json", str(header), cwd=tmp_path)
    assert doc["notes"] == []
    [finding] = [f for f in doc["findings"] if f["kind"] == "aliasing-write"]
    assert finding["function"] == "strbuf_fill_inline"
    assert Path(finding["file"]) == header


def test_a_unit_missing_a_header_is_read_back_until_the_header_appears(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(CODEBASES / "relative_includes", root)
    header = root / "include" / "buf.h"
    text = header.read_text()
    header.unlink()
    cache = tmp_path / "cache"
    database = ("--compile-commands", str(tmp_path / "compile_commands.json"))
    (tmp_path / "compile_commands.json").write_text(json.dumps(bear_style(root)))
    first = lint(*database, cwd=tmp_path, cache=cache)
    [note] = first["notes"]
    assert "'buf.h' file not found" in note
    written = cache_entries(cache)
    assert lint(*database, cwd=tmp_path, cache=cache) == first
    assert cache_entries(cache) == written
    header.write_text(text)
    found = lint(*database, cwd=tmp_path, cache=cache)
    assert found["notes"] == []
    assert [f["function"] for f in found["findings"] if f["kind"] == "aliasing-write"] == [
        "buf_fill"
    ]
