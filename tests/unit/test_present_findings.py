"""Outputs of an advise document: text in 100 columns, SARIF that validates, Markdown."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
from rich.console import Console

from perfsleuth.model.findings import Finding
from perfsleuth.present import findings_text, markdown, sarif

SCHEMA = Path(__file__).resolve().parents[1] / "fixtures" / "sarif-schema-2.1.0.json"
LONG = "std::_Rb_tree<int, std::pair<int const, std::string>>::_M_emplace_hint_unique" * 2


def document(tmp_path: Path) -> dict:
    located = Finding(
        rule="allocator.glibc",
        kind="allocator",
        title="39.6% of CPU time is in the glibc/libstdc++ allocator (malloc, free, new, delete)",
        share=0.396,
        estimated_gain=0.198,
        confidence=0.8,
        suggestion="Use mimalloc, jemalloc or tcmalloc (no code change needed) " * 3,
        function=LONG,
        file=str(tmp_path / "src" / "index.cc"),
        line=42,
        evidence=["__libc_malloc 9.9% self, 21.5% total", LONG],
        fix={"command": "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 ./app"},
        verified={"ratio": 1.42, "ci95": [1.35, 1.5], "runs": 10},
    )
    unlocated = Finding(
        rule="symbols.missing",
        kind="missing-symbols",
        title="30% of samples have no function name",
        share=0.3,
        estimated_gain=0.0,
        confidence=0.6,
        suggestion="install debug symbols",
        dso="libz.so.1",
    )
    return {
        "run": "7",
        "findings": [located.to_json(), unlocated.to_json()],
        "hidden": 2,
        "notes": ["verification is unavailable"],
        "src_roots": [str(tmp_path / "src")],
    }


def test_text_fits_in_100_columns(tmp_path: Path) -> None:
    out = io.StringIO()
    findings_text.render(document(tmp_path), Console(file=out, width=160, no_color=True))
    lines = out.getvalue().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100
    assert any("try: LD_PRELOAD=" in line for line in lines)
    assert any("verified: 1.42x faster over 10 runs" in line for line in lines)
    assert any("2 finding(s) below the noise floor" in line for line in lines)


def test_sarif_validates_and_points_at_file_and_line(tmp_path: Path) -> None:
    log = sarif.to_sarif(document(tmp_path))
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    located, unlocated = log["runs"][0]["results"]
    physical = located["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "index.cc", "uriBaseId": "SRCROOT"}
    assert physical["region"]["startLine"] == 42
    assert located["level"] == "warning" and unlocated["level"] == "note"
    assert "locations" not in unlocated


def test_markdown_has_a_ranked_table(tmp_path: Path) -> None:
    md = markdown.to_markdown(document(tmp_path))
    assert "| 1 | 19.8% | 39.6% | 0.80 |" in md
    assert "```sh\nLD_PRELOAD=" in md
