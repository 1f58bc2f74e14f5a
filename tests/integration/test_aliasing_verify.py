"""`advise --verify` for aliasing writes: a scratch copy is changed and recompiled;
the user's source is never touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.advisor import verify
from perfsleuth.analyzers import Context
from perfsleuth.analyzers.aliasing_write import build_finding
from perfsleuth.commands.lint import lint
from perfsleuth.experiments.aliasing import verify_aliasing
from perfsleuth.model.profile import Profile
from perfsleuth.model.run import RunInfo
from perfsleuth.static_analysis import byte_map
from perfsleuth.static_analysis.source import TranslationUnit
from perfsleuth.static_analysis.unit_analysis import analyse_unit

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def finding_of(source: Path, function: str, compile_commands: Path | None = None):  # type: ignore[no-untyped-def]
    findings, _ = lint([source], compile_commands)
    return next(f for f in findings if f.kind == "aliasing-write" and f.function == function)


def built_by(source: Path, command: str) -> Path:
    """A compile_commands.json saying `command` builds the source."""
    database = source.parent / "compile_commands.json"
    entry = {"directory": str(source.parent), "file": source.name, "command": command}
    database.write_text(json.dumps([entry]))
    return database


def test_char8_t_makes_the_example_loop_vectorize(tmp_path: Path) -> None:
    source = tmp_path / "expand.cc"
    shutil.copy(ROOT / "examples" / "aliasing" / "expand.cc", source)
    before = digest(source)
    proof = verify_aliasing(finding_of(source, "expand"))
    assert proof is not None
    assert proof["change"] == "write through char8_t"
    assert not proof["vectorized_before"] and proof["vectorized_after"]
    assert proof["reloads_before"] > 0 and proof["reloads_after"] == 0
    assert proof["instructions_per_element_after"] < proof["instructions_per_element_before"]
    assert "clang 16 now vectorizes the loop" in proof["summary"]
    assert proof["method"] == "recompiled a scratch copy with clang-16"
    assert digest(source) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expand.cc"]


def test_hoisting_in_c_is_tried_when_there_is_no_char8_t(tmp_path: Path) -> None:
    source = tmp_path / "prune.c"
    source.write_text(
        "#include <stdint.h>\nstruct T { unsigned n; };\n"
        "void prune(const struct T* t, uint8_t* out, const uint8_t* in) {\n"
        "  for (unsigned i = 0; i < t->n; ++i) out[i] = in[i] + 1;\n"
        "}\n"
    )
    proof = verify_aliasing(finding_of(source, "prune"))
    assert proof is not None
    assert proof["change"] == "hoist `t->n` into locals before the loop"
    assert proof["vectorized_after"]


def test_advise_verify_proves_an_aliasing_finding_without_the_recorded_command(
    tmp_path: Path,
) -> None:
    source = tmp_path / "expand.cc"
    shutil.copy(ROOT / "examples" / "aliasing" / "expand.cc", source)
    finding = finding_of(source, "expand")
    ctx = Context(profile=Profile(), run=RunInfo(command="--pid 42"))
    verify([finding], ctx)
    assert finding.verified is not None
    assert finding.verified["change"] == "write through char8_t"
    assert any("attached to a PID" in note for note in ctx.notes)


def test_a_gcc_built_unit_is_verified_with_gcc_and_the_best_change_wins(tmp_path: Path) -> None:
    """GCC -O2 keeps the loop scalar with char8_t; hoisting the size and both data
    pointers removes every reload, so that is the change proved (char8_t is listed)."""
    source = tmp_path / "expand.cc"
    shutil.copy(ROOT / "examples" / "aliasing" / "expand.cc", source)
    database = built_by(source, f"g++-12 -O2 -std=c++20 -c {source.name} -o expand.o")
    finding = finding_of(source, "expand", database)
    assert finding.details["compiler"]["family"] == "gcc"
    assert finding.suggestion.startswith("hoist `in.size()`")
    # lint reads the loop in GCC's own build of the unit, not clang's
    assert any(e.startswith("machine code of expand (GCC 12's build") for e in finding.evidence)
    assert finding.details["confirmed_by"]["machine_code"] == "GCC 12 build"
    proof = verify_aliasing(finding)
    assert proof is not None
    assert proof["method"] == "recompiled a scratch copy with GCC 12"
    assert proof["change"].startswith("hoist `in.size()`, `in.data()`, `out.data()`")
    assert proof["reloads_before"] > 0 and proof["reloads_after"] == 0
    assert any(tried.startswith("write through char8_t") for tried in proof["also_tried"])


MARKS = ROOT / "tests" / "fixtures" / "straight_line_marks.c"


@pytest.mark.parametrize("compiler", ["clang-16", "gcc-12"])
def test_a_straight_line_match_is_verified_by_its_code_reloading_no_more(
    tmp_path: Path, compiler: str
) -> None:
    """`mark` reads c->kind again after a byte store; read once into a local, the
    compiler's code loads nothing again after the stores."""
    source = tmp_path / MARKS.name
    shutil.copy(MARKS, source)
    database = built_by(source, f"{compiler} -O2 -c {source.name} -o marks.o")
    finding = finding_of(source, "mark", database)
    assert finding.details["match"]["pattern"] == "straight-line"
    proof = verify_aliasing(finding)
    assert proof is not None
    assert proof["straight_line"]
    assert proof["change"] == "hoist `c->kind` into locals before the store"
    assert proof["reloads_before"] > 0 and proof["reloads_after"] == 0
    assert "loads memory again after the byte stores" in proof["summary"]
    assert "perfsleuth_hoisted_0 == 2" in proof["patched_files"][str(source)]
    assert source.read_text() == MARKS.read_text()


SINK = "void sink(const unsigned char* p, unsigned long n);\n"
KEYS = """#include <cstdint>
#include <vector>
#include "sink.h"
struct Key {
  void flush() const { sink(bytes, 32); }
  unsigned char bytes[32];
};
void pack(std::vector<Key>& out, const std::vector<uint64_t>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    out[i].bytes[0] = v[i] & 255;
    out[i].bytes[1] = (v[i] >> 8) & 255;
  }
}
"""


def test_a_char8_t_change_that_does_not_compile_is_said(tmp_path: Path) -> None:
    """A library's unsigned char API (sink.h) refuses char8_t: the proof names the
    compiler's error and proves the next change, hoisting."""
    (tmp_path / "sink.h").write_text(SINK)
    source = tmp_path / "keys.cc"
    source.write_text(KEYS)
    ctx = Context(profile=Profile(), run=RunInfo())
    proof = verify_aliasing(finding_of(source, "pack"), ctx)
    assert proof is not None
    assert proof["change"].startswith("hoist")
    [refused] = proof["not_compiled"]
    assert refused.startswith("write through char8_t does not compile with clang 16:")
    assert "sink" in refused
    assert refused in proof["summary"]
    assert any("does not compile" in note for note in ctx.notes)


def test_no_char8_t_is_tried_without_strict_aliasing(tmp_path: Path) -> None:
    source = tmp_path / "expand.cc"
    shutil.copy(ROOT / "examples" / "aliasing" / "expand.cc", source)
    command = f"g++-12 -O2 -fno-strict-aliasing -std=c++20 -c {source.name}"
    finding = finding_of(source, "expand", built_by(source, command))
    assert "-fno-strict-aliasing" in finding.suggestion
    assert not finding.suggestion.startswith("write through char8_t")
    proof = verify_aliasing(finding)
    assert proof is not None
    assert proof["change"].startswith("hoist") and proof["also_tried"] == []


def perfsleuth(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "--quiet", "--store", str(cwd / "store"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("compiler", ["g++-12", "clang++-16"])
def test_advise_verify_builds_and_times_the_change(tmp_path: Path, compiler: str) -> None:
    """With the build command, the original and the changed program are built by the
    user's compiler and run interleaved: a ratio with its interval, as `compare` gives."""
    shutil.copy(ROOT / "examples" / "aliasing" / "expand.cc", tmp_path / "expand.cc")
    build = f"{compiler} -O2 -g -std=c++20 -o $OUT/expand expand.cc"
    subprocess.run(
        ["sh", "-c", build], env={**os.environ, "OUT": str(tmp_path)}, cwd=tmp_path, check=True
    )
    perfsleuth("record", "--", "./expand", "3000", cwd=tmp_path)
    advice = json.loads(
        perfsleuth(
            "advise", "--all", "--verify", "--build", build, "--format", "json", cwd=tmp_path
        )
    )
    finding = next(f for f in advice["findings"] if f["kind"] == "aliasing-write")
    verified = finding["verified"]
    assert verified["timed"] and verified["metric"] == "cpu"
    assert verified["runs"] >= 9 and verified["baseline"]["failed"] == 0
    lo, hi = verified["ci95"]
    assert lo <= verified["ratio"] <= hi
    assert verified["candidate"]["command"].endswith("/builds/changed/expand 3000")
    expected = "GCC 12" if compiler == "g++-12" else "clang 16"
    assert verified["compiler"] == expected
    assert (tmp_path / "expand.cc").read_text() == (
        ROOT / "examples" / "aliasing" / "expand.cc"
    ).read_text()


EXAMPLES = ROOT / "examples" / "aliasing"


def keys_in_header(folder: Path, include: str = '#include "key.h"') -> Path:
    """examples/aliasing/keys.cc (the bulletproof_PROVE shape) and key.h, whose
    `unsigned char bytes[32]` is the written type (as rct::key's in rctTypes.h) when
    keys.cc is built with -DKEY_IN_HEADER."""
    shutil.copy(EXAMPLES / "key.h", folder / "key.h")
    source = folder / "keys.cc"
    text = (EXAMPLES / "keys.cc").read_text()
    assert '#include "key.h"' in text
    source.write_text(text.replace('#include "key.h"', include))
    return source


@pytest.mark.parametrize(("compiler", "name"), [("g++-12", "GCC 12"), ("clang++-16", "clang 16")])
def test_char8_t_is_tried_in_the_header_that_declares_the_type(
    tmp_path: Path, compiler: str, name: str
) -> None:
    """The byte type is declared in key.h: the header is changed in the scratch
    overlay (the user's is not), the unit built as C++20 (its flags say C++17, and the
    proof says so), and the loop loses its reloads and its eight byte stores. clang's
    reloads are v[i] read again a byte at a time (`(v[i] >> 8) & 255` is the byte at
    +1): found in clang's code, the match is a finding, not a note."""
    source = keys_in_header(tmp_path)
    header = digest(tmp_path / "key.h")
    command = f"{compiler} -O2 -std=c++17 -DKEY_IN_HEADER -c {source.name} -o keys.o"
    database = built_by(source, command)
    finding = finding_of(source, "pack", database)
    assert finding.details["match"]["write_declared"][0] == str(tmp_path / "key.h")
    proof = verify_aliasing(finding)
    assert proof is not None
    assert proof["change"] == "write through char8_t, every byte type of key.h"
    [refused] = proof["not_compiled"]  # the field alone: its unsigned char& accessor
    assert refused.startswith(f"write through char8_t in key.h does not compile with {name}:")
    assert proof["reloads_before"] >= 7 and proof["reloads_after"] == 0
    assert proof["byte_stores_before"] == 8 and proof["byte_stores_after"] == 0
    assert proof["instructions_per_element_after"] < proof["instructions_per_element_before"]
    assert proof["standard"].startswith("built as C++20, which char8_t needs")
    assert "-std=c++17" in proof["standard"] and proof["standard"] in proof["summary"]
    assert proof["not_tried"] == ""
    [changed] = proof["patched_files"]
    assert changed == str(tmp_path / "key.h")
    assert "char8_t bytes[32];" in proof["patched_files"][changed]
    assert digest(tmp_path / "key.h") == header
    assert source.read_text() == (EXAMPLES / "keys.cc").read_text()


@pytest.mark.parametrize("compiler", ["g++-12", "clang++-16"])
def test_an_element_read_after_each_byte_store_is_read_once_per_iteration(
    tmp_path: Path, compiler: str
) -> None:
    """Monero's case: the key's bytes go to an unsigned char API (sink.h, as rct::key's
    to crypto_verify_32), so char8_t in key.h does not compile; v[i] read once at the
    top of the body does what char8_t would: no reload, one store for the eight bytes."""
    source = keys_in_header(tmp_path)
    (tmp_path / "sink.h").write_text(SINK)
    example = (tmp_path / "key.h").read_text()
    assert "struct key {\n" in example
    key = example.replace(
        "struct key {\n", "struct key {\n    void flush() const { sink(bytes, 32); }\n"
    )
    (tmp_path / "key.h").write_text(f'#include "sink.h"\n{key}')
    command = f"{compiler} -O2 -std=c++20 -DKEY_IN_HEADER -c {source.name} -o keys.o"
    proof = verify_aliasing(finding_of(source, "pack", built_by(source, command)))
    assert proof is not None
    assert proof["change"].endswith("and read `v[i]` once per iteration")
    assert len(proof["not_compiled"]) == 2
    assert all("does not compile" in refused for refused in proof["not_compiled"])
    assert proof["reloads_before"] >= 7 and proof["reloads_after"] == 0
    assert proof["byte_stores_before"] == 8 and proof["byte_stores_after"] == 0
    assert "byte stores 8 -> 0" in proof["summary"]
    assert "check the two cannot overlap" in proof["summary"]  # what a hoist assumes
    [text] = proof["patched_files"].values()
    assert "const auto perfsleuth_element_0 = " in text
    assert (tmp_path / "key.h").read_text() == f'#include "sink.h"\n{key}'


def test_a_header_the_overlay_does_not_reach_is_not_taken_for_changed(tmp_path: Path) -> None:
    """Included by its absolute path, key.h is read from the user's folder, not the
    scratch overlay: the char8_t changes are refused with that reason, not proved."""
    source = keys_in_header(tmp_path, f'#include "{tmp_path / "key.h"}"')
    command = f"g++-12 -O2 -std=c++20 -DKEY_IN_HEADER -c {source.name} -o keys.o"
    database = built_by(source, command)
    proof = verify_aliasing(finding_of(source, "pack", database))
    assert proof is not None
    assert proof["change"].startswith("hoist")
    assert len(proof["not_compiled"]) == 2
    assert all("the build still read the original key.h" in r for r in proof["not_compiled"])


def test_char8_t_declared_in_a_system_header_is_said_not_tried(tmp_path: Path) -> None:
    """key.h in an -isystem folder is not the project's to change: the proof says where
    the type is declared instead of changing it."""
    system = tmp_path / "system"
    system.mkdir()
    source = keys_in_header(tmp_path)
    (tmp_path / "key.h").rename(system / "key.h")
    command = f"g++-12 -O2 -std=c++20 -DKEY_IN_HEADER -isystem {system} -c {source.name}"
    proof = verify_aliasing(finding_of(source, "pack", built_by(source, command)))
    assert proof is not None
    assert proof["change"].startswith("hoist") and proof["not_compiled"] == []
    assert proof["not_tried"].startswith(
        "char8_t not tried: the written type is declared in key.h:15, a system header"
    )
    assert proof["not_tried"] in proof["summary"]


def test_advise_verify_times_a_change_made_in_a_header(tmp_path: Path) -> None:
    """The timed proof changes key.h in the copied build folder and builds it with the
    user's build command: the user's key.h is untouched."""
    source = keys_in_header(tmp_path)
    header = digest(tmp_path / "key.h")
    build = f"g++-12 -O2 -g -std=c++20 -DKEY_IN_HEADER -o $OUT/keys {source.name}"
    subprocess.run(
        ["sh", "-c", build], env={**os.environ, "OUT": str(tmp_path)}, cwd=tmp_path, check=True
    )
    perfsleuth("record", "--", "./keys", "10000", cwd=tmp_path)
    # DW_AT_producer has no -D: the compile database says the type comes from key.h
    database = built_by(source, f"g++-12 -O2 -std=c++20 -DKEY_IN_HEADER -c {source.name}")
    advice = json.loads(
        perfsleuth(
            "advise",
            "--all",
            "--verify",
            "--build",
            build,
            "--compile-commands",
            str(database),
            "--format",
            "json",
            cwd=tmp_path,
        )
    )
    finding = next(f for f in advice["findings"] if f["kind"] == "aliasing-write")
    verified = finding["verified"]
    assert verified["change"] == "write through char8_t, every byte type of key.h"
    assert verified["timed"] and verified["baseline"]["failed"] == 0
    assert verified["candidate"]["failed"] == 0
    lo, hi = verified["ci95"]
    assert lo <= verified["ratio"] <= hi
    assert verified["candidate"]["command"].endswith("/builds/changed/keys 10000")
    assert digest(tmp_path / "key.h") == header


def test_lint_verify_proves_each_aliasing_fix_without_a_run(tmp_path: Path) -> None:
    """`lint --verify` attaches the compile-only proof to each aliasing finding (here
    char8_t made in key.h), in JSON and in the text report."""
    source = keys_in_header(tmp_path)
    database = built_by(source, f"g++-12 -O2 -std=c++20 -DKEY_IN_HEADER -c {source.name}")
    args = ("lint", source.name, "--compile-commands", str(database), "--verify", "--no-cache")
    doc = json.loads(perfsleuth(*args, "--format", "json", cwd=tmp_path))
    [finding] = [f for f in doc["findings"] if f["kind"] == "aliasing-write"]
    verified = finding["verified"]
    assert verified["change"] == "write through char8_t, every byte type of key.h"
    assert verified["timed"] is False
    assert verified["byte_stores_before"] == 8 and verified["byte_stores_after"] == 0
    assert any("does not compile with GCC 12" in note for note in doc["notes"])
    text = perfsleuth(*args, cwd=tmp_path)
    assert f"    verified: {verified['summary']}" in text.splitlines()


# bitcoin's GCC build passes options clang's driver refuses: dropped for libclang's
# parse, kept for GCC's builds of the proof.
BITCOIN_GCC_ONLY = "-fno-extended-identifiers -fstack-reuse=none"


@pytest.mark.parametrize(
    ("compiler", "name"),
    [(f"g++-12 {BITCOIN_GCC_ONLY}", "GCC 12"), ("clang++-16", "clang 16")],
)
def test_a_byte_map_through_a_switch_is_proved_vectorised_in_blocks(
    tmp_path: Path, compiler: str, name: str
) -> None:
    """bitcoin's SwapBase64 shape (swap64.cc): hoisting and char8_t leave the switch's
    loop scalar; the map computed without branches, 16 bytes at a time into a local
    block, is vectorised by both compilers at -O2, with no byte store left."""
    source = tmp_path / "swap64.cc"
    shutil.copy(EXAMPLES / "swap64.cc", source)
    database = built_by(source, f"{compiler} -O2 -std=c++20 -c {source.name} -o swap64.o")
    proof = verify_aliasing(finding_of(source, "swap_alphabet", database))
    assert proof is not None
    assert proof["change"] == byte_map.CHANGE
    assert not proof["vectorized_before"] and proof["vectorized_after"]
    assert f"{name} now vectorizes the loop" in proof["summary"]
    assert proof["byte_stores_before"] == 1 and proof["byte_stores_after"] == 0
    assert proof["instructions_per_element_after"] < proof["instructions_per_element_before"]
    assert "(once per 16 bytes)" in proof["summary"]
    assert "check the two cannot overlap" in proof["summary"]
    assert any(tried.startswith("hoist `from.size()`") for tried in proof["also_tried"])
    [text] = proof["patched_files"].values()
    assert "__builtin_memcpy(&to[i], perfsleuth_block" in text
    assert source.read_text() == (EXAMPLES / "swap64.cc").read_text()


MAPS = r"""#include <cstdio>
#include <string>
__attribute__((noinline)) std::string classify(const std::string& from) {
    std::string to;
    to.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) {
        switch (from[i]) {
            case 'a': case 'b': to[i] = 'x'; break;
            case '\xff': to[i] = '\x01'; break;
            case ' ': to[i] = from[i]; break;
            default: to[i] = '.'; break;
        }
    }
    return to;
}
int main() {
    unsigned long h = 0;
    for (std::size_t n = 0; n < 70; ++n) {
        for (int first = 0; first < 256; ++first) {
            std::string in(n, ' ');
            for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<char>(first + 37 * i);
            for (unsigned char c : classify(in)) h = h * 131 + c;
        }
    }
    std::printf("%lx\n", h);
}
"""


@pytest.mark.parametrize("compiler", ["g++-12", "clang++-16"])
def test_the_block_rewrite_maps_every_byte_as_the_switch_did(tmp_path: Path, compiler: str) -> None:
    """The rewritten loop (grouped labels, a case storing the key, a constant default,
    a byte above 127) gives the original's output for every byte value at every
    length from 0 to 69: whole blocks, and the rest through the original loop."""
    source = tmp_path / "maps.cc"
    source.write_text(MAPS)
    database = built_by(source, f"{compiler} -O2 -std=c++20 -c {source.name} -o maps.o")
    proof = verify_aliasing(finding_of(source, "classify", database))
    assert proof is not None and proof["change"] == byte_map.CHANGE
    changed = tmp_path / "changed.cc"
    changed.write_text(proof["patched_files"][str(source)])
    outputs = []
    for program, built_from in (("original", source), ("changed", changed)):
        subprocess.run(
            [compiler, "-O2", "-std=c++20", "-o", str(tmp_path / program), str(built_from)],
            check=True,
        )
        run = subprocess.run([str(tmp_path / program)], capture_output=True, text=True, check=True)
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1] != ""


APPEND = """#include <stdlib.h>
typedef struct { char* str; unsigned long len; unsigned long allocated_len; } Str;
__attribute__((noinline)) void grow(Str* s, char c) {
  s->allocated_len = 2 * s->allocated_len + 2;
  s->str = realloc(s->str, s->allocated_len);
  s->str[s->len++] = c;
  s->str[s->len] = 0;
}
Str* append_c(Str* s, char c) {
  if (s->len + 1 < s->allocated_len) {
    s->str[s->len++] = c;
    s->str[s->len] = 0;
  } else
    grow(s, c);
  return s;
}
"""
APPEND_MAIN = r"""#include <stdio.h>
int main(void) {
  Str s = {0, 0, 0};
  for (int i = 0; i < 100000; i++) append_c(&s, (char)('a' + i % 26));
  unsigned long h = s.len;
  for (unsigned long i = 0; i <= s.len; i++) h = h * 131 + (unsigned char)s.str[i];
  printf("%lu %lx\n", s.len, h);
  return 0;
}
"""


@pytest.mark.parametrize(("compiler", "name"), [("gcc-12", "GCC 12"), ("clang-16", "clang 16")])
def test_a_counter_the_code_also_writes_is_kept_in_a_local_and_written_back(
    tmp_path: Path, compiler: str, name: str
) -> None:
    """glib's g_string_append_c_inline shape: `s->len` is read again after the byte
    store, and the code increments it. A local alone would lose the increment: the
    length and the string pointer are kept in locals and the length is written back
    after the stores; the code loads nothing again, and the program's output is the
    original's."""
    source = tmp_path / "append.c"
    source.write_text(APPEND)
    finding = finding_of(source, "append_c", built_by(source, f"{compiler} -O2 -c {source.name}"))
    assert finding.details["match"]["read"] == "s->len"
    proof = verify_aliasing(finding)
    assert proof is not None and proof["compiler"] == name
    assert proof["change"] == (
        "hoist `s->len`, `s->str` into locals before the store, and write `s->len` back after it"
    )
    assert proof["reloads_before"] > 0 and proof["reloads_after"] == 0
    outputs = []
    for program, text in (("original", APPEND), ("changed", proof["patched_files"][str(source)])):
        (tmp_path / f"{program}.c").write_text(text + APPEND_MAIN)
        built = tmp_path / program
        subprocess.run(
            [compiler, "-O2", "-o", str(built), str(tmp_path / f"{program}.c")], check=True
        )
        outputs.append(
            subprocess.run([str(built)], capture_output=True, text=True, check=True).stdout
        )
    assert outputs[0] == outputs[1] != ""


def test_code_in_a_header_is_verified_through_the_unit_that_includes_it(tmp_path: Path) -> None:
    """glib's case: the hot inline function is in a header that may only be included
    through its umbrella header (gstring.h through glib.h), so it cannot be built
    alone; the proof builds the unit that includes it, with the header changed in the
    scratch overlay."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "all.h").write_text('#define ALL_INSIDE\n#include "str.h"\n#undef ALL_INSIDE\n')
    inline = APPEND.split("Str* append_c", 1)[1].replace("grow(s, c);", "grow_str(s, c);")
    header = lib / "str.h"
    header.write_text(
        '#ifndef ALL_INSIDE\n#error "Only <all.h> can be included directly."\n#endif\n'
        "typedef struct { char* str; unsigned long len; unsigned long allocated_len; } Str;\n"
        f"void grow_str(Str* s, char c);\nstatic inline Str* append_c{inline}"
    )
    source = tmp_path / "use.c"
    source.write_text(
        '#include "all.h"\nStr* repeat(Str* s, const char* t, unsigned long n) {\n'
        "  for (unsigned long i = 0; i < n; i++) append_c(s, t[i]);\n  return s;\n}\n"
    )
    unit = TranslationUnit(source, ["-O2", f"-I{lib}"], "compile_commands.json", tmp_path)
    lines = header.read_text().splitlines()
    first = next(n for n, text in enumerate(lines, 1) if text.startswith("static inline"))
    report = analyse_unit(unit, frozenset(("str.h", n) for n in range(first, len(lines) + 1)))
    [match] = [m for m in report.matches if m.function == "append_c"]
    finding = build_finding(match, report, None, report.loop_code(match, None), 0.5, False)
    assert finding.details["unit"] == str(source)
    proof = verify_aliasing(finding)
    assert proof is not None
    assert proof["change"].endswith("and write `s->len` back after it")
    assert list(proof["patched_files"]) == [str(header)]
    assert proof["reloads_before"] > 0 and proof["reloads_after"] == 0
    assert header.read_text().startswith("#ifndef ALL_INSIDE")  # the user's header, unchanged
