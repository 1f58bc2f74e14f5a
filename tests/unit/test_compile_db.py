"""Flags of a translation unit: compile_commands.json, DW_AT_producer, defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.static_analysis.compile_db import (
    compile_args,
    flags_for,
    load_compile_commands,
    producer_flags,
)


def test_gcc_producer_gives_the_dialect_and_the_code_generation_flags() -> None:
    producer = (
        "GNU C++20 12.2.0 -mtune=generic -march=x86-64 -g -O2 -std=c++20 "
        "-fasynchronous-unwind-tables"
    )
    assert producer_flags(producer) == ["-march=x86-64", "-O2", "-std=c++20"]
    assert producer_flags("GNU C17 12.2.0 -O3") == ["-O3", "-std=gnu17"]


def test_clang_producer_without_a_command_line_gives_nothing() -> None:
    assert producer_flags("Debian clang version 16.0.6 (15)") == []


def test_output_options_and_the_source_are_dropped() -> None:
    argv = ["-O2", "-Iinc", "-c", "a.cc", "-o", "a.o", "-MD", "-MF", "a.d", "-DX=1"]
    assert compile_args(argv, Path("/src/a.cc")) == ["-O2", "-Iinc", "-DX=1"]


def test_flags_that_would_stop_the_analysis_are_dropped() -> None:
    argv = ["-O2", "-Werror", "-Werror=format", "-flto=auto", "-fsanitize=address", "-g"]
    assert compile_args(argv, Path("/src/a.cc")) == ["-O2", "-g"]


def test_compile_commands_entries_resolve_against_their_directory(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    db = tmp_path / "compile_commands.json"
    db.write_text(
        json.dumps(
            [
                {"directory": "src", "file": "a.c", "command": "cc -O3 -c a.c -o a.o"},
                {"directory": str(tmp_path), "file": "b.cc", "arguments": ["c++", "-O1", "b.cc"]},
            ]
        )
    )
    table = load_compile_commands(db)
    a = table[(tmp_path / "src" / "a.c").resolve()]
    assert a.args == ("-O3",)
    assert a.origin == "compile_commands.json"
    assert Path(a.directory) == (tmp_path / "src").resolve()
    assert table[(tmp_path / "b.cc").resolve()].args == ("-O1",)


def test_a_broken_compile_commands_is_one_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "compile_commands.json"
    db.write_text("{not json")
    with pytest.raises(UserError, match="compile_commands.json"):
        load_compile_commands(db)


def test_flags_fall_back_from_database_to_producer_to_defaults(tmp_path: Path) -> None:
    source = tmp_path / "a.cc"
    assert flags_for(source, None, "GNU C++17 12.2.0 -O3").origin == "DW_AT_producer"
    assert flags_for(source, None, "GNU C++17 12.2.0 -O3").args == ("-O3", "-std=gnu++17")
    defaults = flags_for(source, None, "")
    assert defaults.origin == "defaults"
    assert "-O2" in defaults.args
    assert flags_for(tmp_path / "a.c").args == ("-O2", "-std=gnu17")


def test_headers_get_a_language_and_a_plain_h_is_judged_by_its_contents(tmp_path: Path) -> None:
    c_header = tmp_path / "buf.h"
    c_header.write_text("struct B { char* p; };\n")
    cxx_header = tmp_path / "vec.h"
    cxx_header.write_text("namespace x { class V {}; }\n")
    assert flags_for(tmp_path / "a.hpp").args[:2] == ("-x", "c++")
    assert flags_for(c_header).args[:2] == ("-x", "c")
    assert flags_for(cxx_header).args[:2] == ("-x", "c++")


def test_relative_include_paths_resolve_against_the_entry_directory(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    db = tmp_path / "compile_commands.json"
    command = (
        "cc -I../include -isystem ../third -include ../cfg.h -iquote q "
        "--sysroot=sys -I/abs -DX=-Idefine -c ../src/a.c -o a.o"
    )
    db.write_text(json.dumps([{"directory": str(build), "file": "../src/a.c", "command": command}]))
    args = load_compile_commands(db)[(tmp_path / "src" / "a.c").resolve()].args
    assert args == (
        f"-I{tmp_path}/include",
        "-isystem",
        f"{tmp_path}/third",
        "-include",
        f"{tmp_path}/cfg.h",
        "-iquote",
        f"{build}/q",
        f"--sysroot={build}/sys",
        "-I/abs",
        "-DX=-Idefine",
    )


def test_response_files_are_read_relative_to_the_entry_directory(tmp_path: Path) -> None:
    (tmp_path / "flags.rsp").write_text("-I inc '-DNAME=\"a b\"' @more.rsp\n")
    (tmp_path / "more.rsp").write_text("-O3\n")
    db = tmp_path / "compile_commands.json"
    entry = {"directory": str(tmp_path), "file": "a.cc", "arguments": ["c++", "@flags.rsp", "a.cc"]}
    db.write_text(json.dumps([entry]))
    args = load_compile_commands(db)[(tmp_path / "a.cc").resolve()].args
    assert args == ("-I", f"{tmp_path}/inc", '-DNAME="a b"', "-O3")


def test_an_entry_without_a_file_is_one_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([{"directory": ".", "command": "cc -c a.c"}]))
    with pytest.raises(UserError, match='without a "file"'):
        load_compile_commands(db)


def test_a_file_the_database_misses_gets_its_nearest_neighbours_flags(tmp_path: Path) -> None:
    entries = [
        {"directory": str(tmp_path), "file": "lib/a.c", "arguments": ["cc", "-DLIB", "lib/a.c"]},
        {"directory": str(tmp_path), "file": "lib/b.cc", "arguments": ["c++", "-DCXX", "lib/b.cc"]},
        {"directory": str(tmp_path), "file": "app/m.c", "arguments": ["cc", "-DAPP", "app/m.c"]},
    ]
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps(entries))
    table = load_compile_commands(db)
    header = flags_for(tmp_path / "lib" / "inner" / "x.h", table)
    assert header.args == ("-x", "c", "-DLIB")
    assert header.origin == "compile_commands.json (as its neighbour a.c)"
    assert flags_for(tmp_path / "lib" / "y.cpp", table).args == ("-DCXX",)
    assert flags_for(tmp_path / "app" / "n.c", table).args == ("-DAPP",)


def test_a_hot_header_no_unit_is_known_to_include_is_analysed_with_neighbour_flags(
    tmp_path: Path,
) -> None:
    from perfsleuth.static_analysis.source import HotCode, hot_units

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "fill.h").write_text("static inline void f(char* p) { *p = 0; }\n")
    entry = {"directory": str(tmp_path), "file": "lib/a.c", "arguments": ["cc", "-DLIB", "a.c"]}
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([entry]))
    hot = HotCode(1.0, {("fill.h", 1): 1.0}, {"fill.h": ("prog", 1.0, ["f"])})
    [(unit, binary)], notes = hot_units(hot, [], [tmp_path], db, limit=3)
    assert unit.path == tmp_path / "lib" / "fill.h"
    assert unit.flags == ["-x", "c", "-DLIB"]
    assert binary is None and notes == []
    assert hot_units(hot, [], [tmp_path], None, limit=3)[0] == []


def test_the_nearest_neighbour_is_in_the_same_folder_and_of_the_same_name_first(
    tmp_path: Path,
) -> None:
    names = ["lib/sub/deep.c", "lib/other.c", "lib/str.c"]
    entries = [
        {"directory": str(tmp_path), "file": name, "arguments": ["cc", f"-D{Path(name).stem}"]}
        for name in names
    ]
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps(entries))
    table = load_compile_commands(db)
    assert flags_for(tmp_path / "lib" / "str.h", table).args == ("-x", "c", "-Dstr")
    assert "-Ddeep" not in flags_for(tmp_path / "lib" / "zz.h", table).args
