"""perfsleuth.binaries: one cached Binary per file version, read from the example
programs and checked against readelf, nm and pyelftools' own parse of the same file."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from perfsleuth.binaries import STT_FUNC, Binary, binary_at, elf_info

SMALL_C = "int f(int x) { return x + 1; }\nint g(int y) { return f(y) * 2; }\n"


def _binary(path: Path) -> Binary:
    found = binary_at(path)
    assert found is not None
    return found


def _open_paths() -> set[str]:
    fds = Path("/proc/self/fd")
    out = set()
    for fd in fds.iterdir():
        try:
            out.add(os.readlink(fd))
        except OSError:
            continue
    return out


def test_build_id_is_the_one_readelf_prints(examples_built: Path) -> None:
    exe = examples_built / "o0_build"
    notes = subprocess.run(
        ["readelf", "-n", str(exe)], capture_output=True, text=True, check=True
    ).stdout
    build_id = _binary(exe).build_id
    assert len(build_id) == 40
    assert f"Build ID: {build_id}" in notes


@pytest.mark.parametrize("name", ["o0_build", "pointers-clang", "alloc_heavy-static"])
def test_sections_and_segments_agree_with_pyelftools(examples_built: Path, name: str) -> None:
    exe = examples_built / name
    binary = _binary(exe)
    with open(exe, "rb") as f:
        elf = ELFFile(f)
        sections = [
            (s.name, s["sh_addr"], s["sh_offset"], s["sh_size"], s["sh_link"])
            for s in elf.iter_sections()
        ]
        segments = [
            (p["p_offset"], p["p_vaddr"], p["p_filesz"], p["p_memsz"], p["p_flags"])
            for p in elf.iter_segments()
        ]
        text = elf.get_section_by_name(".text").data()
    assert [(s.name, s.addr, s.offset, s.size, s.link) for s in binary.sections] == sections
    assert [(p.offset, p.vaddr, p.filesz, p.memsz, p.flags) for p in binary.segments] == segments
    section = binary.section(".text")
    assert section is not None
    assert binary.data(section) == text
    assert binary.is_x86_64
    assert binary.dynamic == (name != "alloc_heavy-static")


def test_elf_info_maps_file_offsets_to_addresses(examples_built: Path) -> None:
    exe = examples_built / "o0_build"
    info = elf_info(str(exe))
    assert info is not None
    assert info.has_symbols and info.has_debug_info
    assert info.build_id == _binary(exe).build_id
    off, filesz, vaddr, _ = next(s for s in info.segments if s[0] != 0)
    assert info.offset_to_vaddr(off) == vaddr
    assert info.offset_to_vaddr(off + filesz - 1) == vaddr + filesz - 1
    assert info.offset_to_vaddr(10**12) is None


@pytest.mark.parametrize("table", [".symtab", ".dynsym"])
def test_symbol_tables_agree_with_pyelftools(examples_built: Path, table: str) -> None:
    exe = examples_built / "alloc_heavy"
    with open(exe, "rb") as f:
        section = ELFFile(f).get_section_by_name(table)
        assert isinstance(section, SymbolTableSection)
        expected = [
            (s.name, s["st_value"], s["st_size"], s["st_shndx"] == "SHN_UNDEF")
            for s in section.iter_symbols()
        ]
    symbols = _binary(exe).symbols(table)
    assert [(s.name, s.value, s.size, not s.defined) for s in symbols] == expected
    assert any(s.name.startswith("printf") and not s.defined for s in symbols)


def test_function_symbols_are_the_ones_nm_lists(examples_built: Path) -> None:
    exe = examples_built / "o0_build"
    listed = subprocess.run(
        ["nm", "--defined-only", str(exe)], capture_output=True, text=True, check=True
    ).stdout
    text_symbols = {
        (int(address, 16), name)
        for address, kind, name in (line.split() for line in listed.splitlines())
        if kind in "Tt"
    }
    functions = {
        (s.value, s.name)
        for s in _binary(exe).symbols(".symtab", frozenset({STT_FUNC}))
        if s.defined
    }
    assert functions
    assert functions <= text_symbols
    assert any(name == "main" for _a, name in functions)


def test_code_at_a_function_is_its_bytes_in_text(examples_built: Path) -> None:
    exe = examples_built / "o0_build"
    binary = _binary(exe)
    main = next(s for s in binary.symbols(".symtab") if s.name == "main")
    text = binary.section(".text")
    assert text is not None
    start = main.value - text.addr
    assert binary.code(main.value, main.size) == binary.data(text)[start : start + main.size]
    assert binary.code(0, 16) is None  # .comment is at 0 but is not loaded


def test_compile_units_of_gcc_and_clang_builds(examples_built: Path) -> None:
    gcc_units = _binary(examples_built / "o0_build").compile_units
    unit = next(u for u in gcc_units if u.name.endswith("o0_build.c"))
    assert unit.producer.startswith("GNU C")
    assert "-O0" in unit.flags
    assert unit.language.startswith("C")
    assert Path(unit.comp_dir).is_dir()
    assert Path(unit.path).is_file()  # comp dir + name: the source that was built
    clang_units = _binary(examples_built / "pointers-clang").compile_units
    assert clang_units
    assert all("clang" in u.producer for u in clang_units)


def test_dwarf_is_kept_and_no_file_stays_open(examples_built: Path) -> None:
    exe = examples_built / "pointers"
    binary = _binary(exe)
    dwarf = binary.dwarf()
    assert dwarf is not None
    assert binary.dwarf() is dwarf
    names = {
        die.attributes["DW_AT_name"].value
        for cu in dwarf.iter_CUs()
        for die in cu.iter_DIEs()
        if die.tag == "DW_TAG_structure_type" and "DW_AT_name" in die.attributes
    }
    assert names  # the DIEs are read after the file was closed
    assert str(exe) not in _open_paths()


def test_one_binary_per_file_version(examples_built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "prog"
    shutil.copy(examples_built / "o0_build", copy)
    first = _binary(copy)
    assert binary_at(copy) is first
    assert binary_at(str(copy)) is first
    shutil.copy(examples_built / "pointers", copy)  # rebuilt in place
    os.utime(copy, ns=(1, 1))
    second = _binary(copy)
    assert second is not first
    assert second.build_id == _binary(examples_built / "pointers").build_id


def test_a_stripped_copy_has_code_but_no_debug_info(examples_built: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "stripped"
    subprocess.run(["strip", "-o", str(stripped), str(examples_built / "o0_build")], check=True)
    binary = _binary(stripped)
    assert binary.build_id == _binary(examples_built / "o0_build").build_id
    assert binary.dwarf() is None
    assert binary.compile_units == ()
    assert binary.symbols(".symtab") == []
    assert binary.symbols(".dynsym")
    assert not binary.info.has_symbols and not binary.info.has_debug_info


def test_a_32_bit_object_is_read_too(tmp_path: Path) -> None:
    source = tmp_path / "small.c"
    source.write_text(SMALL_C)
    obj = tmp_path / "small.o"
    subprocess.run(["gcc", "-m32", "-g", "-c", str(source), "-o", str(obj)], check=True)
    binary = _binary(obj)
    assert not binary.headers.elf64 and not binary.is_x86_64
    functions = {s.name: s.size for s in binary.symbols(types=frozenset({STT_FUNC}))}
    assert {"f", "g"} <= set(functions) and functions["f"] and functions["g"]
    assert [u.name for u in binary.compile_units] == [str(source)]


def test_what_is_not_an_elf_file_is_none(tmp_path: Path) -> None:
    text = tmp_path / "script.sh"
    text.write_text("#!/bin/sh\necho hi\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    truncated = tmp_path / "truncated"
    truncated.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    for path in (text, fifo, tmp_path, tmp_path / "missing", truncated):
        assert binary_at(path) is None


def test_a_function_s_dwarf_entry_is_found_by_its_plain_name(examples_built: Path) -> None:
    exe = examples_built / "pointers"
    binary = _binary(exe)
    account = binary.subprogram("account")
    assert account is not None
    assert account.tag == "DW_TAG_subprogram"
    listed = subprocess.run(
        ["nm", "--defined-only", str(exe)], capture_output=True, text=True, check=True
    ).stdout
    address = next(
        int(line.split()[0], 16) for line in listed.splitlines() if line.endswith(" account")
    )
    assert account.attributes["DW_AT_low_pc"].value == address
    assert binary.subprogram("no_such_function") is None


def test_the_unit_at_an_address_is_the_one_that_compiled_its_function(tmp_path: Path) -> None:
    """brotli's hot CreateBackwardReferencesNH6 is backward_references.c's (its code is in
    headers): a build-flags hint said where: constants.c, the first unit of the binary."""
    (tmp_path / "main.c").write_text("int twice(int x);\nint main(void) { return twice(0); }\n")
    (tmp_path / "util.c").write_text("int twice(int x) { return 2 * x; }\n")
    exe = tmp_path / "two"
    subprocess.run(
        ["gcc", "-O2", "-g", "-o", str(exe), str(tmp_path / "main.c"), str(tmp_path / "util.c")],
        check=True,
    )
    binary = _binary(exe)
    functions = {s.name: s.value for s in binary.symbols(types=frozenset({STT_FUNC}))}
    for name, source in (("main", "main.c"), ("twice", "util.c")):
        unit = binary.unit_at(functions[name])
        assert unit is not None and unit.path == str(tmp_path / source)
    assert binary.unit_at(0) is None
