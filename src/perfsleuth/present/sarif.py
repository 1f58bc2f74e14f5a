"""SARIF 2.1.0: findings as results at file:line, for code scanning and IDEs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

from .. import __version__
from . import FINDINGS, Output
from .json import encode

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
ROOT_ID = "SRCROOT"


def to_sarif(doc: dict[str, Any]) -> dict[str, Any]:
    roots = [Path(r) for r in doc.get("src_roots", [])]
    findings = doc["findings"]
    rule_ids = list(dict.fromkeys(f["rule"] for f in findings))
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "perfsleuth",
                "version": __version__,
                "rules": [_rule(rule_id, findings) for rule_id in rule_ids],
            }
        },
        "results": [_result(f, rule_ids.index(f["rule"]), roots) for f in findings],
        "properties": {"run": doc["run"]},
    }
    if roots:
        run["originalUriBaseIds"] = {
            _root_id(i): {"uri": root.as_uri().rstrip("/") + "/"} for i, root in enumerate(roots)
        }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _rule(rule_id: str, findings: list[dict[str, Any]]) -> dict[str, Any]:
    first = next(f for f in findings if f["rule"] == rule_id)
    return {
        "id": rule_id,
        "name": "".join(part.capitalize() for part in rule_id.replace("-", ".").split(".")),
        "shortDescription": {"text": f"perfsleuth {first['kind']} finding"},
        "help": {"text": first["suggestion"]},
        "properties": {"kind": first["kind"]},
    }


def _result(f: dict[str, Any], rule_index: int, roots: list[Path]) -> dict[str, Any]:
    message = f"{f['title']}. {f['suggestion']}"
    result: dict[str, Any] = {
        "ruleId": f["rule"],
        "ruleIndex": rule_index,
        "level": "warning" if f["confidence"] >= 0.7 else "note",
        "message": {"text": message},
        "properties": {
            "share": f["share"],
            "estimatedGain": f["estimated_gain"],
            "gain": f["gain"],  # rank.py's: the measured gain when an experiment verified it
            "gainMeasured": f["gain_measured"],
            "gainLow": f.get("gain_low", 0.0),
            "gainHigh": f.get("gain_high", 0.0),
            "gainBasis": f.get("gain_basis", ""),
            "confidence": f["confidence"],
            "evidence": f.get("evidence", []),
            "fix": f.get("fix", {}),
        },
    }
    location = _location(f, roots)
    if location is not None:
        result["locations"] = [location]
    if f.get("verified"):
        result["properties"]["verified"] = f["verified"]
    return result


def _location(f: dict[str, Any], roots: list[Path]) -> dict[str, Any] | None:
    artifact = _artifact(f.get("file") or "", roots)
    if artifact is None:
        return None
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if f.get("line", 0) > 0:
        physical["region"] = {"startLine": int(f["line"])}
    location: dict[str, Any] = {"physicalLocation": physical}
    if f.get("function"):
        location["logicalLocations"] = [{"name": f["function"], "kind": "function"}]
    return location


def _artifact(file: str, roots: list[Path]) -> dict[str, Any] | None:
    if not file:
        return None
    path = Path(file)
    if path.is_absolute():
        for i, root in enumerate(roots):
            if path.is_relative_to(root):
                return {"uri": path.relative_to(root).as_posix(), "uriBaseId": _root_id(i)}
        return {"uri": path.as_uri()}
    return {"uri": Path(os.path.normpath(file)).as_posix(), "uriBaseId": ROOT_ID}


def _root_id(index: int) -> str:
    return ROOT_ID if index == 0 else f"{ROOT_ID}{index}"


def _write(doc: dict[str, Any], fh: IO[bytes]) -> None:
    fh.write(encode(to_sarif(doc)))


OUTPUT = Output(
    name="sarif",
    help="SARIF 2.1.0 findings at file:line, for code scanning and IDEs",
    writers={FINDINGS: _write},
    binary=True,
)
