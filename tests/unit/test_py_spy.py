"""py-spy raw output (formats/py_spy.py) and how a Python command is told (collect/python.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfsleuth.analyzers import library_match
from perfsleuth.collect import python
from perfsleuth.errors import UserError
from perfsleuth.formats import detect, py_spy
from perfsleuth.model.profile import Frame
from perfsleuth.present import folded
from perfsleuth.rules import load_rules
from perfsleuth.views import flame

# Real lines of `py-spy record --native --threads --full-filenames --format raw`
# (py-spy 0.4.3, Debian's python3.11 and pyenv's 3.11.7 with debug info), shortened.
RAW = (
    "thread (1331): MainThread;0x7faa04d5c24a (/usr/lib/x86_64-linux-gnu/libc.so.6);"
    "<module> (/srv/app.py:11);encode (/srv/app.py:4);"
    "dumps (/usr/lib/python3.11/json/__init__.py:231);"
    "JSONEncoder.iterencode (/usr/lib/python3.11/json/encoder.py:258);"
    "0x7faa04a6dc99 (/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so) 7\n"
    "thread (1331): MainThread;0x7faa04d5c24a (/usr/lib/x86_64-linux-gnu/libc.so.6);"
    "<module> (/srv/app.py:11);compress (/srv/app.py:8);"
    "deflate (/usr/lib/x86_64-linux-gnu/libz.so.1.2.13);0x7faa04f46a26 (?) 3\n"
    "thread (1332): worker;encoder_call (_json.c:1305);"
    "<module> (<frozen importlib._bootstrap>:1178) 1\n"
)


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    path = tmp_path / "out.txt"
    path.write_text(RAW)
    return path


def test_python_frames_keep_file_line_and_module(raw: Path) -> None:
    profile = py_spy.read(raw, freq=100)
    frames = set(profile.frames)
    assert Frame("encode", "[python:app]", "/srv/app.py", 4) in frames
    encoder = "/usr/lib/python3.11/json/encoder.py"
    iterencode = Frame("JSONEncoder.iterencode", "[python:json.encoder]", encoder, 258)
    assert iterencode in frames
    assert Frame("dumps", "[python:json]", "/usr/lib/python3.11/json/__init__.py", 231) in frames
    assert Frame("[unknown]", "_json.cpython-311-x86_64-linux-gnu.so") in frames
    assert Frame("deflate", "libz.so.1.2.13") in frames
    assert Frame("[unknown]", "[unknown]") in frames
    assert Frame("encoder_call", "", "_json.c", 1305) in frames
    assert profile.num_samples == 11 and profile.meta["freq"] == 100


def test_stacks_are_leaf_first_with_threads(raw: Path) -> None:
    profile = py_spy.read(raw)
    stacks = {
        tuple(profile.frames[f].function for f in stack): (count, profile.threads[t])
        for stack, _w, count, t, _s in profile.rows()
    }
    key = ("deflate", "compress", "<module>", "[unknown]")
    assert stacks[("[unknown]", *key)][0] == 3
    assert stacks[("[unknown]", *key)][1].tid == 1331
    assert {t.name for t in profile.threads} == {"MainThread", "worker"}


def test_module_names() -> None:
    assert py_spy.module_of("/usr/lib/python3.11/json/__init__.py") == "json"
    assert py_spy.module_of("/v/lib/python3.11/site-packages/numpy/core/numeric.py") == (
        "numpy.core.numeric"
    )
    assert py_spy.module_of("/srv/app.py") == "app"
    assert py_spy.module_of("json/encoder.py") == "json.encoder"
    assert py_spy.module_of("<frozen importlib._bootstrap>") == "importlib._bootstrap"


def test_import_sniffs_py_spy_before_folded(raw: Path) -> None:
    assert detect(raw) is py_spy


def test_json_rule_names_the_python_call_site(raw: Path) -> None:
    profile = py_spy.read(raw)
    matches = library_match.match_rules(profile, load_rules())
    json_match = matches["python.json"]
    assert json_match.inclusive == 8  # with the C frame encoder_call
    site = max(json_match.call_sites, key=json_match.call_sites.__getitem__)
    assert (site.function, site.file, site.line) == ("encode", "/srv/app.py", 4)
    zlib_match = matches["compression.zlib"]
    site = max(zlib_match.call_sites, key=zlib_match.call_sites.__getitem__)
    assert (site.function, site.line) == ("compress", 8)


def test_a_python_command_is_told_by_its_interpreter(tmp_path: Path) -> None:
    assert python.is_python_command([sys.executable, "app.py"])
    assert not python.is_python_command(["/bin/true"])
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env python3\nprint(1)\n")
    script.chmod(0o755)
    assert python.is_python_command([str(script)])
    shell = tmp_path / "run.sh"
    shell.write_text("#!/bin/sh\necho\n")
    shell.chmod(0o755)
    assert not python.is_python_command([str(shell)])


def test_a_runners_run_of_python_is_a_python_command(tmp_path: Path) -> None:
    assert python.is_python_command(["uv", "run", "app.py"])
    assert python.is_python_command(["uv", "run", "--with", "orjson", "python3", "-m", "app"])
    assert python.is_python_command(["poetry", "run", sys.executable, "app.py"])
    assert python.is_python_command(["pyenv", "exec", "python3.12", "app.py"])
    tool = tmp_path / "tool"
    tool.write_text("#!/usr/bin/env python3\nprint(1)\n")
    tool.chmod(0o755)
    assert python.is_python_command(["pdm", "run", str(tool)])
    assert not python.is_python_command(["uv", "run", "cargo", "build"])
    assert not python.is_python_command(["uv", "pip", "install", "app.py"])


def test_a_python_process_is_told_by_its_executable() -> None:
    assert python.is_python_process(os.getpid())
    assert not python.is_python_process(1 << 30)
    assert python.interpreter_in(os.getpid()) == os.getpid()


def test_a_runners_pid_leads_to_its_interpreter_child() -> None:
    """`uv run`'s PID is uv's; the interpreter is its child (here: a shell's)."""
    sleeper = f"{sys.executable} -c 'import time; time.sleep(30)'; :"
    shell = subprocess.Popen(["/bin/sh", "-c", sleeper])
    child = None
    try:
        deadline = time.monotonic() + 20
        while child is None and time.monotonic() < deadline:
            time.sleep(0.01)
            child = python.interpreter_in(shell.pid)
        assert child is not None and child != shell.pid and python.is_cpython(child)
        assert not python.is_cpython(shell.pid) and python.is_python_process(shell.pid)
    finally:
        if child is not None:
            os.kill(child, signal.SIGKILL)
        shell.kill()
        shell.wait(timeout=30)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("main (/srv/app.py:3) " + "9" * 5000, "out of range"),
        ("main (/srv/app.py:3) " + "9" * 20, "out of range"),
        ("thread (08): MainThread;main (/srv/app.py:3) 2", "thread id '08'"),
        ("thread (" + "9" * 5000 + "): MainThread;main (/srv/app.py:3) 2", "thread id"),
        ('process 99999999999999999999999:"x";main (/srv/app.py:3) 2', "process id"),
        (";".join(["f (/srv/app.py:3)"] * 70000) + " 1", "deeper than"),
    ],
)
def test_bad_lines_are_one_line_errors(tmp_path: Path, line: str, says: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(RAW + line + "\n")
    with pytest.raises(UserError, match=says) as caught:
        py_spy.read(path)
    assert "\n" not in str(caught.value) and "bad.txt:4" in str(caught.value)


def test_a_line_number_past_any_file_is_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("main (/srv/app.py:" + "9" * 5000 + ") 2\n")
    profile = py_spy.read(path)
    assert profile.num_samples == 2


def test_a_file_without_stacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n\n")
    with pytest.raises(UserError, match="no stacks"):
        py_spy.read(path)


SAME_NAMES = (
    "thread (7): MainThread;<module> (/srv/app.py:11);compress (/srv/app.py:8);"
    "compress (/usr/lib/x86_64-linux-gnu/libz.so.1.2.13);"
    "deflate (/usr/lib/x86_64-linux-gnu/libz.so.1.2.13) 5\n"
    "thread (7): MainThread;<module> (/srv/app.py:12);compress (/srv/app.py:8) 2\n"
)


def test_folded_export_keeps_python_file_and_line_and_reads_back(tmp_path: Path) -> None:
    raw = tmp_path / "same.txt"
    raw.write_text(SAME_NAMES)
    profile = py_spy.read(raw)
    lines = folded.lines(profile)
    assert "<module> (/srv/app.py:11);compress (/srv/app.py:8);compress;deflate 5" in lines
    again = tmp_path / "again.folded"
    again.write_text("\n".join(lines) + "\n")
    assert detect(again) is py_spy
    frames = set(py_spy.read(again).frames)
    assert Frame("compress", "[python:app]", "/srv/app.py", 8) in frames


def test_flame_tells_a_python_function_from_a_native_one_of_its_name(tmp_path: Path) -> None:
    raw = tmp_path / "same.txt"
    raw.write_text(SAME_NAMES)
    columns = flame.flame_columns(py_spy.read(raw))
    labels = [
        (columns.depth[i], columns.names[columns.name[i]]) for i in range(1, len(columns.name))
    ]
    total = columns.values["total"]
    assert labels[:3] == [
        (1, "<module>" + flame.PYTHON_SUFFIX),
        (2, "compress" + flame.PYTHON_SUFFIX),
        (3, "compress"),
    ]
    assert total[2] == 7  # the Python compress, apart from the native one below it


def test_a_file_cut_mid_line_says_it_was_cut_short(tmp_path: Path) -> None:
    """What a full disk left of py-spy's output (CI, stop 40): a last line without its
    count and newline is named as a cut file, not as a wrong format."""
    path = tmp_path / "py-spy.txt"
    path.write_text(RAW + "thread (3821);_call_with_frames_removed (<frozen importlib._b")
    with pytest.raises(UserError, match="cut short") as caught:
        py_spy.read(path)
    assert "py-spy.txt:4" in str(caught.value)


def test_a_whole_last_line_without_newline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "py-spy.txt"
    path.write_text(RAW + "main (/srv/app.py:3) 2")
    assert py_spy.read(path).num_samples == py_spy.read(_written(tmp_path, RAW)).num_samples + 2


def _written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "whole.txt"
    path.write_text(text)
    return path
