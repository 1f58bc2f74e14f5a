"""`perfsleuth lint`: the aliasing and vectorisation analyses of sources, no profile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SET = Path(__file__).resolve().parents[1] / "aliasing_set"
MARKS = Path(__file__).resolve().parents[1] / "fixtures" / "straight_line_marks.c"


def lint(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "lint", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def test_json_is_ordered_by_confidence_and_names_the_evidence() -> None:
    done = lint(str(SET / "pointers.c"), "--format", "json")
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["findings"]
    confidences = [f["confidence"] for f in findings]
    assert confidences == sorted(confidences, reverse=True)
    fill = next(f for f in findings if f["function"] == "buf_fill")
    assert fill["kind"] == "aliasing-write"
    assert fill["evidence"][1].startswith("clang: loop not vectorized")
    assert fill["evidence"][2].startswith("machine code of buf_fill (clang-16's build of the unit)")
    assert any("byte ptr [" in line for line in fill["evidence"][3:])


def test_sarif_has_one_result_per_finding_at_its_line() -> None:
    done = lint("--compile-commands", str(SET / "compile_commands.json"), "--format", "sarif")
    assert done.returncode == 0, done.stderr
    sarif = json.loads(done.stdout)
    results = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0"
    assert any(r["ruleId"] == "aliasing-write.loop-condition" for r in results)
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] > 0


def test_a_unit_that_does_not_compile_is_skipped_with_the_first_error(tmp_path: Path) -> None:
    (tmp_path / "bad.c").write_text("int f(void) { return undefined_name; }\n")
    (tmp_path / "good.c").write_text(
        "#include <stddef.h>\nstruct S { char* p; size_t n; };\n"
        "void f(struct S* s) { for (size_t i = 0; i < s->n; i++) s->p[i] = 0; }\n"
    )
    done = lint(str(tmp_path), "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [f["function"] for f in doc["findings"] if f["kind"] == "aliasing-write"] == ["f"]
    [note] = doc["notes"]
    assert "bad.c" in note and "undeclared identifier 'undefined_name'" in note


def test_a_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = lint(str(tmp_path / "nope.cc"))
    assert done.returncode == 2
    assert "no such file" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# GCC 12 -O2 makes this loop a memset (cells has 64 bytes, so no store reaches width);
# clang-16 keeps it and reloads r->width after every byte.
CLEAR_ROW = """struct Row { unsigned char cells[64]; int width; };

void clear_row(struct Row* r) {
    for (int i = 0; i < r->width; i++) r->cells[i] = 0;
}
"""


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_loop_its_compiler_made_a_call_is_a_note_not_a_finding(
    tmp_path: Path, compiler: str
) -> None:
    (tmp_path / "row.c").write_text(CLEAR_ROW)
    entry = {"directory": ".", "file": "row.c", "arguments": [compiler, "-O2", "-c", "row.c"]}
    (tmp_path / "compile_commands.json").write_text(json.dumps([entry]))
    done = lint("--no-cache", "--compile-commands", "compile_commands.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if compiler == "clang":
        assert done.stdout.startswith("1 finding(s)") and "reload `r->width`" in done.stdout
        return
    assert done.stdout.startswith("0 finding(s)")
    [note] = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert note.startswith("note: not reported: the loop at row.c:4 in clear_row")
    assert "GCC 12's build of the unit has no machine loop for its lines" in note


def lint_unit(folder: Path, source: str, compiler: str) -> dict:
    """lint's JSON document of one unit built by `compiler` -O2 (a compile database)."""
    entry = {"directory": ".", "file": source, "arguments": [compiler, "-O2", "-c", source]}
    (folder / "compile_commands.json").write_text(json.dumps([entry]))
    done = lint(
        "--no-cache", "--compile-commands", "compile_commands.json", "--format", "json", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_straight_line_code_is_a_finding_only_where_its_compiler_reloads(
    tmp_path: Path, compiler: str
) -> None:
    """`mark`'s build loads c->kind again after its byte store; copy2's `*op` is its
    caller's local, in a register in every inlined copy (zstd's ZSTD_overlapCopy8)."""
    (tmp_path / "marks.c").write_text(MARKS.read_text())
    doc = lint_unit(tmp_path, "marks.c", compiler)
    [finding] = [f for f in doc["findings"] if f["kind"] == "aliasing-write"]
    assert (finding["function"], finding["rule"]) == ("mark", "aliasing-write.straight-line")
    assert finding["details"]["confirmed_by"]["machine_code"] is not None
    assert any("dword ptr [rdi + 0xc]" in line for line in finding["evidence"])
    [note] = [n for n in doc["notes"] if n.startswith("not reported")]
    assert note.startswith("not reported: the straight-line code at marks.c:13 in copy2")
    assert "loads no address again after a byte store" in note and note.endswith("no cost seen")


HIDDEN = """#include <stdint.h>
__attribute__((visibility("hidden"))) uint8_t* storage_of(void* s);
struct State { uint16_t last_bytes; int bits; };

void emit(struct State* s) {
    uint8_t* storage = storage_of(s);
    storage[0] = (uint8_t)s->last_bytes;
    storage[1] = (uint8_t)(s->last_bytes >> 8);
}
"""


def test_a_unit_calling_a_hidden_function_defined_elsewhere_has_its_machine_code_read(
    tmp_path: Path,
) -> None:
    """The linker refuses an undefined hidden symbol (brotli's BROTLI_INTERNAL); GCC's
    code loads s->last_bytes again after storage[0]."""
    (tmp_path / "emit.c").write_text(HIDDEN)
    [finding] = lint_unit(tmp_path, "emit.c", "gcc")["findings"]
    assert finding["function"] == "emit"
    assert finding["details"]["confirmed_by"]["machine_code"] == "GCC 12 build"
    assert any("word ptr [rbx]  ; emit.c:8" in line for line in finding["evidence"])
