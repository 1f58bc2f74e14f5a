"""fleet advise --verified: which try document verifies which finding, with which variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.fleet import verified

SIDE = {"command": "examples/bin/map_alloc 200", "runs": 9, "failed": 0}


def variant(name: str, ratio: float | None, verdict: str = "faster") -> dict:
    measured = {"ratio": ratio, "ci95": [ratio, ratio], "runs": 9, "p_value": 0.002}
    if ratio is None:
        measured = {"ratio": None, "ci95": None, "error": "not installed"}
    return {"name": name, "verdict": verdict, **measured, "summary": SIDE}


def try_doc(tmp_path: Path, variants: list[dict], **extra: object) -> Path:
    path = tmp_path / "try.json"
    doc = {"metric": "time", "baseline": SIDE, "variants": variants, "failed": [], **extra}
    path.write_text(json.dumps({"experiment": "try-x", **doc}))
    return path


def test_the_variant_the_fix_names_else_the_fastest(tmp_path: Path) -> None:
    variants = [variant("mimalloc", 1.2), variant("jemalloc", 1.5), variant("tcmalloc", None)]
    m = verified.load(try_doc(tmp_path, variants, preload_checks=[]))
    assert (m.kind, m.program) == ("allocator", "map_alloc")
    named = {"command": "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 CMD"}
    assert verified.verified_json(m, named)["variant"] == "mimalloc"
    fastest = verified.verified_json(m, {"command": "LD_PRELOAD=<library> CMD"})
    assert (fastest["variant"], fastest["ratio"], fastest["experiment"]) == (
        "jemalloc",
        1.5,
        "try-x",
    )
    assert fastest["summary"].startswith("jemalloc is 1.50x faster than baseline")
    tcmalloc = {"command": "LD_PRELOAD=/usr/lib/libtcmalloc_minimal.so.4 CMD"}
    assert verified.verified_json(m, tcmalloc)["variant"] == "jemalloc"  # named, not measured


def test_a_try_build_verifies_build_flags_by_its_variant(tmp_path: Path) -> None:
    variants = [variant("O3", 1.1, "same"), variant("lto", 0.8, "slower")]
    m = verified.load(try_doc(tmp_path, variants, build="make"))
    assert m.kind == "build-flags"
    assert verified.verified_json(m, {"variant": "lto"})["variant"] == "lto"


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("examples/bin/map_alloc 200", "map_alloc"),
        ("/bin/sh -c 'exec /srv/app --port 80 < in.txt'", "app"),
        (".perfsleuth/builds/baseline/vm", "vm"),
    ],
)
def test_the_program_measured(command: str, program: str) -> None:
    assert verified.program_of(command) == program


def test_what_is_not_a_usable_try_document(tmp_path: Path) -> None:
    compare = tmp_path / "compare.json"
    compare.write_text(json.dumps({"verdict": "same", "a": SIDE, "b": SIDE}))
    failed = try_doc(tmp_path, [variant("mimalloc", None)], preload_checks=[])
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    for path, message in (
        (compare, "not the JSON of `perfsleuth try allocator|build"),
        (failed, "no variant was measured"),
        (broken, "not JSON"),
        (tmp_path / "missing.json", "No such file"),
    ):
        with pytest.raises(UserError, match=message):
            verified.load(path)
