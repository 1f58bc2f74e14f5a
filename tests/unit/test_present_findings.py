"""Outputs of an advise document: text in 100 columns, SARIF that validates, Markdown."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
from rich.console import Console

from perfsleuth import rank
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
        gain_low=0.119,
        gain_high=0.277,
        gain_basis="jq with mimalloc measured 8% of a 29% share",
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
    tiny = [Finding(f"tiny.{n}", "note", "tiny", 0.001, 0.001, 0.5, "none") for n in (1, 2)]
    return rank.advice(
        "7",
        [located, unlocated, *tiny],
        notes=["verification is unavailable"],
        src_roots=[str(tmp_path / "src")],
    ).to_json()


def test_text_fits_in_100_columns(tmp_path: Path) -> None:
    out = io.StringIO()
    findings_text.render(document(tmp_path), Console(file=out, width=160, no_color=True))
    lines = out.getvalue().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100
    assert any("try: LD_PRELOAD=" in line for line in lines)
    assert any("verified: 1.42x faster over 10 runs" in line for line in lines)
    assert any("2 finding(s) hidden (2 below the noise floor)" in line for line in lines)
    text = " ".join(line.strip() for line in lines)
    assert "estimate 11.9-27.7% of the run, from: jq with mimalloc measured 8%" in text
    assert "symbols.missing" in text and text.count("estimate ") == 1  # no range: no line


def test_sarif_validates_and_points_at_file_and_line(tmp_path: Path) -> None:
    log = sarif.to_sarif(document(tmp_path))
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    unlocated, located = log["runs"][0]["results"]  # 30% without names comes first
    physical = located["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "index.cc", "uriBaseId": "SRCROOT"}
    assert physical["region"]["startLine"] == 42
    assert located["level"] == "warning" and unlocated["level"] == "note"
    assert "locations" not in unlocated
    props = located["properties"]
    assert (props["gainLow"], props["gainHigh"]) == (0.119, 0.277)
    assert props["gainBasis"].startswith("jq with mimalloc")


def test_markdown_has_a_ranked_table(tmp_path: Path) -> None:
    md = markdown.to_markdown(document(tmp_path))
    assert "| 2 | 29.6%\\* | 39.6% | 0.80 |" in md  # 1.42x measured: 1 - 1/1.42
    assert "```sh\nLD_PRELOAD=" in md
    assert "**Gain:** Estimate 11.9-27.7% of the run, from: jq with mimalloc" in md


def test_a_verdict_of_same_shows_no_gain(tmp_path: Path) -> None:
    """An A/B "same" verdict is a gain of 0 and hides the finding, in every output:
    the text once showed the ratio's 16.7%* for it while rank.gain said 0."""
    same = Finding("allocator.glibc", "allocator", "allocator", 0.4, 0.2, 0.8, "mimalloc")
    same.verified = {"ratio": 1.2, "ci95": [0.9, 1.6], "runs": 10, "verdict": "same"}
    doc = rank.advice("7", [same], show_all=True).to_json()
    assert doc["findings"][0]["gain"] == 0.0 and doc["findings"][0]["gain_measured"]
    out = io.StringIO()
    findings_text.render(doc, Console(file=out, width=160, no_color=True))
    assert "16.7%" not in out.getvalue() and " 0.0%*" in out.getvalue()
    hidden = rank.advice("7", [same]).to_json()
    assert hidden["findings"] == [] and hidden["hidden"] == 1
    assert hidden["hidden_findings"][0]["hidden_because"] == rank.HIDDEN_BY_VERDICT


def test_a_nameless_function_that_names_its_dso_is_not_placed_in_it_twice() -> None:
    """A stripped program's hottest frame is `[unknown] in gzip`, in DSO gzip."""
    nameless = {"function": "[unknown] in gzip", "dso": "gzip", "file": "", "line": 0}
    assert findings_text.location(nameless) == "[unknown] in gzip"
    named = {"function": "deflate", "dso": "libz.so.1", "file": "", "line": 0}
    assert findings_text.location(named) == "deflate in libz.so.1"
