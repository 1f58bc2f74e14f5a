"""Choosing the hot translation units from a profile, and finding their source."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.static_analysis.source import (
    TranslationUnit,
    binary_path,
    find_source,
    hot_code,
    hot_units,
    source_files,
)


def profile():  # type: ignore[no-untyped-def]
    builder = ProfileBuilder()
    loop = Frame("expand", "prog", "/build/src/expand.cc", 17, inlined=True)
    caller = Frame("main", "prog", "/build/src/main.cc", 40)
    other = Frame("mix", "prog", "/build/src/mix.cc", 9)
    libc = Frame("memset", "libc.so.6", "./string/memset.S", 3)
    builder.add([loop, caller], 70.0)
    builder.add([other, caller], 20.0)
    builder.add([libc, caller], 10.0)
    return builder.build()


def test_inlined_loops_count_on_their_own_lines_and_tus_go_by_physical_function() -> None:
    hot = hot_code(profile())
    assert hot.share("expand.cc", 16, 18) == pytest.approx(0.7)
    # Lines weigh what runs there (self), not what they call: main.cc:40 holds only
    # the inlined expand() samples, not mix()'s.
    assert hot.share("main.cc", 40, 40) == pytest.approx(0.7)
    assert list(hot.files) == ["/build/src/main.cc", "/build/src/mix.cc", "./string/memset.S"]
    assert hot.files["/build/src/main.cc"][2] == ["main"]


def test_source_is_found_by_relative_path_under_a_root(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.cc").write_text("int main() {}\n")
    assert find_source("/build/src/main.cc", [tmp_path]) == tmp_path / "src" / "main.cc"
    assert find_source("/build/src/absent.cc", [tmp_path]) is None


def test_missing_source_is_one_note_pointing_at_src(tmp_path: Path) -> None:
    units, notes = hot_units(hot_code(profile()), [], [tmp_path], None, limit=5)
    assert units == []
    assert len(notes) == 1
    assert "main.cc" in notes[0] and "--src DIR" in notes[0]


def test_only_the_hottest_units_are_taken(tmp_path: Path) -> None:
    for name in ("main.cc", "mix.cc"):
        (tmp_path / name).write_text("int f() { return 0; }\n")
    units, notes = hot_units(hot_code(profile()), [], [tmp_path], None, limit=1)
    assert [unit.path.name for unit, _ in units] == ["main.cc"]
    assert units[0][0].flags_origin == "defaults"
    assert notes == []


def test_a_missing_lint_path_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        source_files([tmp_path / "nope.cc"])


def test_the_language_follows_x_then_the_suffix() -> None:
    assert TranslationUnit(Path("a.h"), ["-x", "c", "-O2"], "defaults").is_cxx is False
    assert TranslationUnit(Path("a.c"), ["-xc++"], "defaults").is_cxx is True
    assert TranslationUnit(Path("a.cc"), [], "defaults").is_cxx is True
    assert TranslationUnit(Path("a.c"), [], "defaults").is_cxx is False


def test_standard_includes_are_forced_for_the_unit_language() -> None:
    unit = TranslationUnit(Path("a.cc"), ["-O2"], "defaults").with_standard_includes()
    assert unit.flags[:3] == ["-O2", "-include", "cstddef"]
    assert "vector" in unit.flags
    assert unit.flags_origin == "defaults + standard includes"


def test_a_count_runs_frames_name_their_binary_by_its_whole_path(tmp_path: Path) -> None:
    """callgrind names an object by its path (/tmp/f29/lua), perf by its file name
    (lua): either finds the run's binary, whose DW_AT_producer then says GCC built it
    (a count run of Lua, GCC-built, was analysed as clang's with default flags)."""
    binary = tmp_path / "lua"
    binary.write_bytes(b"\x7fELF")
    binaries = [{"path": str(binary), "build_id": "0a5e"}]
    assert binary_path("lua", binaries) == binary
    assert binary_path(str(binary), binaries) == binary
    assert binary_path("luac", binaries) is None
