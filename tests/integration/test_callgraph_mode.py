"""--call-graph auto: frame pointers only for binaries whose calling functions all keep them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.collect import callgraph_mode

pytestmark = pytest.mark.integration


def test_examples(examples_built: Path):
    assert callgraph_mode.choose(str(examples_built / "hotspots"), "auto") == "dwarf"
    assert callgraph_mode.choose(str(examples_built / "hotspots-fp"), "auto") == "fp"
    assert callgraph_mode.choose(str(examples_built / "hotspots-fp"), "dwarf") == "dwarf"


def test_one_frameless_caller_means_dwarf(tmp_path: Path):
    """A binary mixing code with and without frame pointers (as Rust binaries do)."""
    src = tmp_path / "mixed.c"
    src.write_text(
        "__attribute__((noinline)) int leaf(int x) { return x * 3; }\n"
        '__attribute__((noinline, optimize("omit-frame-pointer"))) int no_fp(int x)'
        " { return leaf(x) + leaf(x + 1); }\n"
        "__attribute__((noinline)) int with_fp(int x) { return no_fp(x) + leaf(x); }\n"
        "int main(int argc, char **argv) { (void)argv; return with_fp(argc) & 1; }\n"
    )
    exe = tmp_path / "mixed"
    subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-o", str(exe), str(src)], check=True)
    share = callgraph_mode.frame_pointer_share(exe)
    assert share is not None and 0 < share < 1
    assert callgraph_mode.choose(str(exe), "auto") == "dwarf"


def test_not_an_elf_means_dwarf(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    assert callgraph_mode.frame_pointer_share(script) is None
    assert callgraph_mode.choose(str(script), "auto") == "dwarf"
