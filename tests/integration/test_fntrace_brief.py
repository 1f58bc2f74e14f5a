"""fntrace built here and run on a real program: past --detail-calls it writes each
code line's first instruction only and counts the others in the 'R' record; the
reader's totals, distinct lines and kept calls are the same as with every
instruction written (`--scale` runs read about a fifth of the records)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from perfsleuth.collect import fntrace, memtrace
from perfsleuth.collect.valgrind import FIXED_ENV
from perfsleuth.symbols.symbolizer import elf_symbols

pytestmark = pytest.mark.integration

KEPT = 20


def records(program: Path, args: list[str], detail_calls: int, tmp_path: Path) -> tuple:
    tool = fntrace.tool_dir()
    assert tool is not None, "fntrace did not build: cache mode would fall back to lackey"
    entry = elf_symbols(str(program)).address_of("handle_packet")
    assert entry is not None
    out = tmp_path / f"records-{detail_calls}.bin"
    with open(out, "wb") as sink:
        argv = fntrace.argv(
            str(program), args, entry + memtrace.load_base(str(program)), sink.fileno(),
            str(tmp_path / "valgrind.log"), 0, 1, detail_calls,
        )  # fmt: skip
        env = {**FIXED_ENV, "VALGRIND_LIB": tool}
        subprocess.run(argv, env=env, pass_fds=(sink.fileno(),), check=True, timeout=300,
                       stdout=subprocess.DEVNULL)  # fmt: skip
    cutter = fntrace.RecordCutter(KEPT, 64, None, stop_when_full=False)
    cutter.feed(out.read_bytes())
    return cutter.recording, os.path.getsize(out)


def test_instructions_in_brief_change_no_total(examples_built: Path, tmp_path: Path) -> None:
    program = examples_built / "conntable"
    args = ["2000", "3000"]
    whole, whole_size = records(program, args, -1, tmp_path)
    brief, brief_size = records(program, args, KEPT, tmp_path)
    assert whole.total_calls == brief.total_calls > 1000
    assert (whole.instructions, whole.loads, whole.stores) == (
        brief.instructions, brief.loads, brief.stores,
    )  # fmt: skip
    assert whole.code_lines == brief.code_lines and whole.data_lines == brief.data_lines
    assert whole.calls == brief.calls and len(brief.calls) == KEPT
    assert brief_size < whole_size * 0.6
