"""HTML: the built web UI as one self-contained page (no server, no network).

The page is the UI with API answers embedded (server/bundle.py collects them): a run's
whole UI (`report`) or its flame graph alone (`flame --html`), drawn by the UI's one
flame graph. The UI looks every request up in the embedded documents, and a
Content-Security-Policy with no network source keeps it from fetching anything.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO, Any, NamedTuple

from ..errors import UserError
from . import UI, Output

REPORT_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; connect-src 'none'"
)
SCRIPT_TAG = re.compile(r'<script type="module"[^>]*src="([^"]+)"[^>]*></script>')
STYLE_TAG = re.compile(r'<link rel="stylesheet"[^>]*href="([^"]+)"[^>]*>')


class UiBundle(NamedTuple):
    data: dict  # {"docs", "blobs", "start", "overview"}: server/bundle.collect()
    static: Path  # the built UI: index.html and its assets


def ui_page(data: dict, static: Path) -> str:
    """The built UI's index.html with its script, style and `data` inlined."""
    index = static / "index.html"
    if not index.is_file():
        raise UserError("the web UI is not built, so no HTML report can be made: run `make ui`")
    page = index.read_text(encoding="utf-8")
    script = SCRIPT_TAG.search(page)
    style = STYLE_TAG.search(page)
    if not script:
        raise UserError(f"{index} has no module script; rebuild the UI with `make ui`")
    js = _asset(static, script.group(1)).replace("</script", "<\\/script")
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    inline = (
        f'<script type="application/json" id="perfsleuth-data">{payload}</script>\n'
        f'<script type="module">{js}</script>'
    )
    page = page[: script.start()] + inline + page[script.end() :]
    if style:
        css = _asset(static, style.group(1)).replace("</style", "<\\/style")
        page = page.replace(style.group(0), f"<style>{css}</style>")
    csp = f'<meta http-equiv="Content-Security-Policy" content="{REPORT_CSP}">'
    return page.replace("<head>", f"<head>\n{csp}", 1)


def _asset(root: Path, href: str) -> str:
    path = (root / href.lstrip("./")).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        raise UserError(f"the built UI misses {href}; rebuild it with `make ui`")
    return path.read_text(encoding="utf-8")


def _write_ui(doc: UiBundle, fh: IO[Any]) -> None:
    fh.write(ui_page(doc.data, doc.static))


OUTPUT = Output(
    name="html",
    help="one self-contained page of the web UI: a run's flame graph (flame --html) or all of it",
    writers={UI: _write_ui},
)
