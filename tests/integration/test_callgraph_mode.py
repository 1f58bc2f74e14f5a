"""--call-graph auto: frame pointers only for binaries whose calling functions all keep them,
and whose libraries (DT_NEEDED) do too."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.binaries import binary_at
from perfsleuth.binaries.libraries import needed, needed_paths
from perfsleuth.collect import callgraph_mode

pytestmark = pytest.mark.integration


def test_examples(examples_built: Path):
    assert callgraph_mode.choose(str(examples_built / "hotspots"), "auto") == "dwarf"
    assert callgraph_mode.choose(str(examples_built / "hotspots-fp"), "dwarf") == "dwarf"
    fp = callgraph_mode.decide(str(examples_built / "hotspots-fp"), "fp")
    assert fp.mode == "fp" and "asked for" in fp.reason


def test_a_library_without_frame_pointers_means_dwarf(examples_built: Path):
    """hotspots-fp keeps frame pointers; Debian's libc does not, and a walk through it
    (qsort's comparator, printf) would lose the caller the advisor names."""
    choice = callgraph_mode.decide(str(examples_built / "hotspots-fp"), "auto")
    assert choice.mode == "dwarf"
    assert choice.reason.startswith("libc.so.6 keeps no frame pointers")
    assert "hotspots-fp needs it" in choice.reason


def test_frame_pointers_everywhere_means_fp(tmp_path: Path):
    """A program that needs no library and keeps frame pointers in every caller."""
    src = tmp_path / "bare.c"
    src.write_text(
        "__attribute__((noinline)) long leaf(long x) { return x * 3; }\n"
        "__attribute__((noinline)) long mid(long x) { return leaf(x) + leaf(x + 1); }\n"
        "void _start(void) { long r = mid(2);\n"
        '  __asm__ volatile("mov $60, %%eax; syscall" :: "D"(r & 1)); }\n'
    )
    exe = tmp_path / "bare"
    subprocess.run(
        ["gcc", "-O2", "-fno-omit-frame-pointer", "-nostdlib", "-static", "-o", str(exe), str(src)],
        check=True,
    )
    binary = binary_at(exe)
    assert binary is not None and needed(binary) == []
    choice = callgraph_mode.decide(str(exe), "auto")
    assert choice.mode == "fp"
    assert choice.reason == "bare and the libraries it needs keep frame pointers"


def test_libraries_found_through_runpath(tmp_path: Path):
    """DT_NEEDED resolved as the loader does: $ORIGIN in DT_RUNPATH first; the library
    built without frame pointers is the one named."""
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    (tmp_path / "mine.c").write_text(
        "__attribute__((noinline)) int helper(int x) { return x * 7; }\n"
        "int work(int x) { return helper(x) + helper(x + 1); }\n"
    )
    subprocess.run(
        ["gcc", "-O2", "-fomit-frame-pointer", "-shared", "-fPIC", "-o",
         str(lib_dir / "libmine.so"), str(tmp_path / "mine.c")],
        check=True,
    )  # fmt: skip
    (tmp_path / "main.c").write_text(
        "int work(int);\nint main(int argc, char **argv)\n"
        "{ (void)argv; int a = work(argc); int b = work(a * argc + 3); return (a ^ b) & 1; }\n"
    )
    exe = tmp_path / "app"
    subprocess.run(
        ["gcc", "-O2", "-fno-omit-frame-pointer", "-o", str(exe), str(tmp_path / "main.c"),
         f"-L{lib_dir}", "-lmine", "-Wl,-rpath,$ORIGIN/lib"],
        check=True,
    )  # fmt: skip
    binary = binary_at(exe)
    assert binary is not None and needed(binary)[0] == "libmine.so"
    assert needed_paths(binary)[0] == lib_dir / "libmine.so"
    choice = callgraph_mode.decide(str(exe), "auto")
    assert choice.mode == "dwarf" and choice.reason.startswith("libmine.so keeps no frame pointers")


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
