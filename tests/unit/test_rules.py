"""The rules loader: shipped rules load, user files extend them, mistakes name file:line:field."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, library_match
from perfsleuth.collect.run_facts import new_run
from perfsleuth.errors import UserError
from perfsleuth.formats import py_spy, read_any
from perfsleuth.model.findings import Finding
from perfsleuth.model.profile import Frame
from perfsleuth.rules import load_file, load_rules, with_evidence

GOOD = """
[[rule]]
id = "custom.lz4"
kind = "library-replacement"
title = "{share} of CPU time is in lz4"
dsos = ['^liblz4\\.so']
replacement = "zstd --fast"
apply = "link zstd"
code_change = true
saving = 0.2
saving_range = [0.1, 0.3]
source = "our own benchmark"
confidence = 0.6
"""


def test_shipped_rules_load_and_cover_every_family() -> None:
    ids = {rule.id for rule in load_rules()}
    for family in (
        "allocator.glibc",
        "compression.zlib",
        "compression.xz",
        "compression.bzip2",
        "compression.zstd-slow-level",
        "json.parser",
        "regex.std",
        "unicode.icu-case",
        "container.vector-bool",
        "exceptions.control-flow",
        "container.node-map",
        "sort.qsort",
        "formatting.printf",
        "formatting.iostream",
        "locking.mutex-on-cpu",
    ):
        assert family in ids


@pytest.mark.parametrize(
    ("rule_id", "function", "dso"),
    [
        ("compression.xz", "[unknown] liblzma.so.5.4.1+0x190b0", "liblzma.so.5.4.1"),
        ("compression.xz", "lzma_code", "xz"),
        ("compression.bzip2", "[unknown] libbz2.so.1.0.4+0x3140", "libbz2.so.1.0.4"),
        ("compression.bzip2", "BZ2_blockSort", "bzip2"),
        ("compression.zstd-slow-level", "ZSTD_compressBlock_btultra2", "libzstd.so.1"),
        # a count run's DSO: callgrind's whole path
        ("compression.bzip2", "[unknown] libbz2.so.1.0.4+0x3140", "/lib/x86_64/libbz2.so.1.0.4"),
    ],
)
def test_compression_rules_match_by_name_or_library(rule_id: str, function: str, dso: str) -> None:
    rules = {rule.id: rule for rule in load_rules()}
    assert rules[rule_id].matches(function, dso)
    assert not rules[rule_id].matches("ZSTD_compressBlock_lazy2", "zstd")


@pytest.mark.parametrize(
    ("rule_id", "function", "file"),
    [
        ("compression.zlib", "longest_match", "/src/zlib-1.2.13/deflate.c"),  # static helpers
        ("compression.zlib", "inflate_fast", "inffast.c"),
        ("compression.bzip2", "BZ2_blockSort", "blocksort.c"),
        ("json.parser", "cJSON_Parse", "/tmp/cj/cJSON.c"),
    ],
)
def test_library_files_count_only_beside_the_librarys_own_names(
    rule_id: str, function: str, file: str
) -> None:
    """A static helper (no prefix, in the program) is the library's by its source file,
    in a profile where the library's exported names are seen too."""
    helper = Frame("bi_flush_static", "app", file, 10)
    own = Frame("main", "app", "/src/app/main.c", 3)
    rule = next(r for r in load_rules() if r.id == rule_id)
    alone = with_evidence([rule], [helper, own])[0]
    assert not alone.matches(helper.function, helper.dso, helper.file)
    beside = with_evidence([rule], [helper, own, Frame(function, "app", file, 99)])[0]
    assert beside.matches(helper.function, helper.dso, helper.file)
    assert not beside.matches(own.function, own.dso, own.file)


def test_every_shipped_rule_saves_at_most_its_share() -> None:
    for rule in load_rules():
        low, high = rule.saving_range
        assert 0 < low <= rule.saving <= high <= 1, rule.id
        assert rule.source


def test_the_printf_rule_gives_a_fix_for_c_programs_too() -> None:
    """printf is C's: its fix named only {fmt} and std::to_chars, C++ libraries (Lua's
    luaO_tostringbuff, C, was told to use them)."""
    (rule,) = [r for r in load_rules() if r.id == "formatting.printf"]
    assert "(C)" in rule.replacement and "(C++)" in rule.replacement
    assert "in C " in rule.apply and "in C++ " in rule.apply


def test_user_rules_add_and_replace_by_id(tmp_path: Path) -> None:
    extra = tmp_path / "rules.toml"
    extra.write_text(GOOD + GOOD.replace("custom.lz4", "allocator.glibc"))
    rules = {rule.id: rule for rule in load_rules([extra])}
    assert rules["custom.lz4"].matches("LZ4_compress_fast", "liblz4.so.1")
    assert rules["allocator.glibc"].replacement == "zstd --fast"


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD + "\n[[rule]\nid = 3\n")
    with pytest.raises(UserError, match=r"bad\.toml.*line 15"):
        load_file(bad)


def test_unknown_field_names_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "typo.toml"
    bad.write_text(GOOD.replace("confidence = 0.6", "confidense = 0.6"))
    with pytest.raises(UserError, match=r"typo\.toml:13: rule #1, field 'confidense': unknown"):
        load_file(bad)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("saving = 0.2", "saving = 1.5", "saving"),
        ("dsos = ['^liblz4\\.so']", "dsos = ['(unclosed']", "dsos"),
        ("dsos = ['^liblz4\\.so']", "dsos = ['^liblz4']\nfiles = ['lz4(']", "files"),
        ('kind = "library-replacement"', 'kind = "speed"', "kind"),
        ("code_change = true", 'code_change = "yes"', "code_change"),
    ],
)
def test_bad_values_name_the_field(tmp_path: Path, old: str, new: str, field: str) -> None:
    bad = tmp_path / "values.toml"
    text = GOOD.replace(old, new)
    assert text != GOOD
    bad.write_text(text)
    with pytest.raises(UserError, match=rf"values\.toml:\d+: rule #1, field '{field}'"):
        load_file(bad)


def test_missing_required_field_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "missing.toml"
    bad.write_text(GOOD.replace('source = "our own benchmark"\n', ""))
    with pytest.raises(
        UserError, match=r"missing\.toml:2: rule #1: missing required field 'source'"
    ):
        load_file(bad)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read the rules file"):
        load_file(tmp_path / "nope.toml")


# -- the Python rules on captured py-spy runs (tests/fixtures/py_spy: workloads and how) --

PY_SPY = Path(__file__).resolve().parents[1] / "fixtures" / "py_spy"
ROOT = Path(__file__).resolve().parents[2]
CAPTURED_AT = "/work/main/"  # the checkout the fixtures were captured in


def python_findings(fixture: str, tmp_path: Path) -> dict[str, Finding]:
    """The library rules' findings on a captured run, its paths moved to this checkout."""
    raw = tmp_path / fixture
    raw.write_text((PY_SPY / fixture).read_text().replace(CAPTURED_AT, f"{ROOT}/"))
    ctx = Context(profile=py_spy.read(raw), run=new_run("python3 app.py", "python"))
    return {finding.rule: finding for finding in library_match.analyze(ctx)}


def site(finding: Finding) -> tuple[str, str, int]:
    return finding.function, Path(finding.file).name, finding.line


def test_pickle_re_and_deepcopy_rules_name_their_python_callers(tmp_path: Path) -> None:
    found = python_findings("stdlib_hot.txt", tmp_path)
    assert site(found["python.pickle"]) == ("pickle_round_trip", "stdlib_hot.py", 16)
    assert site(found["python.re"]) == ("match_lines.<locals>.<genexpr>", "stdlib_hot.py", 20)
    assert site(found["python.deepcopy"]) == ("clone_records", "stdlib_hot.py", 24)
    assert found["python.pickle"].share == pytest.approx(70 / 189)
    assert found["python.re"].share == pytest.approx(72 / 189)
    assert found["python.deepcopy"].share == pytest.approx(29 / 189)
    assert any("Unpickler" in line for line in found["python.pickle"].evidence)
    assert "python.interpreter" not in found


def test_a_native_library_under_a_c_module_is_called_from_python_code(tmp_path: Path) -> None:
    found = python_findings("stdlib_hot.txt", tmp_path)
    # sprintf under _pickle.c's save_long, malloc under re/__init__.py: the user's lines
    assert site(found["formatting.printf"])[:2] == ("pickle_round_trip", "stdlib_hot.py")
    profile = py_spy.read(PY_SPY / "stdlib_hot.txt")
    malloc = library_match.match_rules(profile, load_rules())["allocator.glibc"]
    assert {Path(frame.file).name for frame in malloc.call_sites} == {"stdlib_hot.py"}


def test_zlib_is_called_from_pack_logs_not_from_the_zlib_module(tmp_path: Path) -> None:
    found = python_findings("zlib_mixed.txt", tmp_path)
    assert site(found["compression.zlib"]) == ("pack_logs", "zlib_mixed.py", 25)
    assert not any("zlibmodule.c" in line for line in found["compression.zlib"].evidence)
    assert "python.interpreter" not in found and "python.numpy-loops" not in found


def test_pure_python_arithmetic_loops_get_numpy_and_interpreter_advice(tmp_path: Path) -> None:
    found = python_findings("elementwise.txt", tmp_path)
    numpy_loops = found["python.numpy-loops"]
    assert numpy_loops.kind == "python-vectorize"
    assert site(numpy_loops)[:2] in (("scale_add", "elementwise.py"), ("dot", "elementwise.py"))
    sites = next(line for line in numpy_loops.evidence if line.startswith("in "))
    assert sites.count("elementwise.py:") == 3  # the three heaviest call sites
    assert "elementwise.py:17" in sites and "elementwise.py:24" in sites
    assert numpy_loops.share > 0.5
    interpreter = found["python.interpreter"]
    assert interpreter.kind == "python-interpreter" and interpreter.share > 0.5
    assert "PGO" in interpreter.suggestion and "3.13" in interpreter.suggestion


def test_the_numpy_rule_needs_the_source_lines(tmp_path: Path) -> None:
    raw = tmp_path / "moved.txt"
    raw.write_text((PY_SPY / "elementwise.txt").read_text().replace(CAPTURED_AT, "/gone/"))
    ctx = Context(profile=py_spy.read(raw), run=new_run("python3 app.py", "python"))
    rules = {finding.rule for finding in library_match.analyze(ctx)}
    assert "python.numpy-loops" not in rules and "python.interpreter" in rules


def test_the_interpreter_rule_reads_a_cpu_mode_run_of_python(tmp_path: Path) -> None:
    # `perfsleuth record --mode cpu -- /usr/bin/python3.11 examples/python/elementwise.py 30`
    # (perf, Debian's python3.11), exported with `perfsleuth export --pprof`
    profile, _ = read_any(PY_SPY / "elementwise_cpu.pb.gz")
    ctx = Context(profile=profile, run=new_run("python3.11 elementwise.py", "cpu"))
    found = {finding.rule: finding for finding in library_match.analyze(ctx)}
    interpreter = found["python.interpreter"]
    assert interpreter.share > 0.5 and interpreter.function == "_PyEval_EvalFrameDefault"
    assert "python.numpy-loops" not in found  # no Python frames: no source line to read
