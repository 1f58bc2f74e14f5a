"""HTML: one self-contained page (no server, no network) for a profile or a whole run.

A profile becomes a canvas flame graph with zoom and search (flame.html). A run becomes
the built web UI with the run's API answers embedded: the UI looks every request up in
the embedded documents, and a Content-Security-Policy with no network source keeps it
from fetching anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path
from typing import IO, Any

from ..errors import UserError
from ..model.profile import Profile
from ..views.flame import tree
from . import PROFILE, UI, Output, TitledProfile

REPORT_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; connect-src 'none'"
)
SCRIPT_TAG = re.compile(r'<script type="module"[^>]*src="([^"]+)"[^>]*></script>')
STYLE_TAG = re.compile(r'<link rel="stylesheet"[^>]*href="([^"]+)"[^>]*>')


@dataclass(frozen=True)
class UiBundle:
    data: dict  # {"docs", "blobs", "start", "overview"}: server/bundle.collect()
    static: Path  # the built UI: index.html and its assets


def flame_page(profile: Profile, title: str) -> str:
    """A canvas flame graph: click to zoom, breadcrumb, regex search, icicle view."""
    template = resources.files(__package__).joinpath("flame.html").read_text(encoding="utf-8")
    data = json.dumps({"title": title, "unit": profile.unit, "root": tree(profile)})
    # The JSON sits inside <script>: keep "</script>" in a symbol name from closing it.
    data = data.replace("</", "<\\/")
    return template.replace("/*DATA*/null", data).replace("{{TITLE}}", escape(title, quote=True))


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


def _write_flame(doc: TitledProfile, fh: IO[Any]) -> None:
    fh.write(flame_page(doc.profile, doc.title))


def _write_ui(doc: UiBundle, fh: IO[Any]) -> None:
    fh.write(ui_page(doc.data, doc.static))


OUTPUT = Output(
    name="html",
    help="one self-contained page: the flame graph of a run, or (report) its whole web UI",
    writers={PROFILE: _write_flame, UI: _write_ui},
)
