"""Reports of an advise document ({"run", "findings", ...}): text, json, sarif, markdown."""

from __future__ import annotations

import json
from typing import Any

from . import markdown, sarif, text
from .output import console_for, destination

FORMATS = ("text", "json", "sarif", "markdown")


def write(doc: dict[str, Any], fmt: str, out: str | None) -> None:
    with destination(out) as fh:
        if fmt == "text":
            text.render(doc, console_for(fh))
        elif fmt == "json":
            json.dump(doc, fh, indent=1, default=str)
            fh.write("\n")
        elif fmt == "sarif":
            json.dump(sarif.to_sarif(doc), fh, indent=1)
            fh.write("\n")
        else:
            fh.write(markdown.to_markdown(doc))
