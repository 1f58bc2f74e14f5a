"""A hot inline function of a header is analysed where it is used: through the unit
that includes it, even when the header sits in an installed library (glib's
gstring.h, which only <glib.h> may include) — run through libclang for real."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsleuth.static_analysis.source import TranslationUnit
from perfsleuth.static_analysis.unit_analysis import analyse_unit

pytestmark = pytest.mark.integration

CONSUMER = Path(__file__).resolve().parents[1] / "fixtures" / "codebases" / "glib_consumer"


def glib_flags() -> list[str]:
    done = subprocess.run(
        ["pkg-config", "--cflags", "glib-2.0"], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def function_lines(header: Path, signature: str) -> range:
    """The lines of the body of the function whose definition starts with `signature`."""
    lines = header.read_text().splitlines()
    first = next(n for n, text in enumerate(lines, 1) if text.startswith(signature))
    last = next(n for n, text in enumerate(lines[first:], first + 1) if text == "}")
    return range(first, last + 1)


def test_glibs_inline_append_is_matched_through_the_unit_that_includes_glib_h() -> None:
    flags = glib_flags()
    include = next(Path(flag[2:]) for flag in flags if flag.endswith("glib-2.0"))
    gstring = include / "glib" / "gstring.h"
    hot = frozenset(
        ("gstring.h", line) for line in function_lines(gstring, "g_string_append_c_inline")
    )
    unit = TranslationUnit(CONSUMER / "repeat.c", ["-O2", *flags], "compile_commands.json")
    report = analyse_unit(unit, hot)
    assert report.error == ""
    [match] = [m for m in report.matches if m.function == "g_string_append_c_inline"]
    assert Path(match.file).resolve() == gstring.resolve()
    assert "gstring->len" in match.read
