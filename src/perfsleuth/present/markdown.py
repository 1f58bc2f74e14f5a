"""The Markdown report, for pull-request comments."""

from __future__ import annotations

from typing import IO, Any

from . import FINDINGS, Output


def to_markdown(doc: dict[str, Any]) -> str:
    # Every command imports the outputs for its --format choices, and findings_text
    # loads the symbol readers (a twentieth of a second): it is imported only to write.
    from .. import rank
    from .findings_text import estimate_range, location

    findings = doc["findings"]
    out = [f"## perfsleuth: {len(findings)} finding(s) for run {doc['run']}", ""]
    if not findings:
        out.append("No findings to show.")
    else:
        out += ["| # | gain | share | confidence | finding |", "|---:|---:|---:|---:|---|"]
        for number, f in enumerate(findings, start=1):
            out.append(
                f"| {number} | {_gain(f)} | {100 * f['share']:.1f}% "
                f"| {f['confidence']:.2f} | {_cell(f['title'])} (`{f['rule']}`) |"
            )
        for number, f in enumerate(findings, start=1):
            out += ["", f"### {number}. {f['title']}", ""]
            where = location(f)
            if where:
                out.append(f"**Where:** `{where}`  ")
            estimate = estimate_range(f)
            if estimate:
                out.append(f"**Gain:** {estimate[0].upper()}{estimate[1:]}  ")
            out.append(f"**Fix:** {f['suggestion']}")
            command = (f.get("fix") or {}).get("command")
            if command:
                out += ["", "```sh", command, "```"]
            if f.get("evidence"):
                out.append("")
                out += [f"- {item}" for item in f["evidence"]]
    if doc.get("hidden"):
        why = rank.hidden_summary(doc.get("hidden_findings", []))
        out += ["", f"_{doc['hidden']} finding(s) not shown ({why})._"]
    for note in doc.get("notes", []):
        out += ["", f"> {note}"]
    return "\n".join(out) + "\n"


def _gain(f: dict[str, Any]) -> str:
    """rank.py's gain; `*` when an A/B experiment measured it."""
    return f"{100 * f['gain']:.1f}%" + ("\\*" if f["gain_measured"] else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _write(doc: dict[str, Any], fh: IO[Any]) -> None:
    fh.write(to_markdown(doc))


OUTPUT = Output(
    name="markdown",
    help="a ranked table and each finding's details, for pull-request comments",
    writers={FINDINGS: _write},
)
