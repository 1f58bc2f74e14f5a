"""The single-file HTML report: the built UI with a run's API answers embedded.

The page runs from file:// with no server: the UI looks every request up in the
embedded documents (same keys as the API's path and parameters), and a
Content-Security-Policy with no network source keeps it from fetching anything.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

from ..errors import UserError
from .api import JSON_TYPE, Api
from .httpd import static_root

TOP_FUNCTIONS = 40
ANNOTATED_FUNCTIONS = 25
REPORT_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; connect-src 'none'"
)
SCRIPT_TAG = re.compile(r'<script type="module"[^>]*src="([^"]+)"[^>]*></script>')
STYLE_TAG = re.compile(r'<link rel="stylesheet"[^>]*href="([^"]+)"[^>]*>')


def request_key(path: str, params: dict[str, str]) -> str:
    """The lookup key the UI computes for a request (ui/src/api.ts requestKey)."""
    query = "&".join(f"{k}={params[k]}" for k in sorted(params))
    return f"{path}?{query}" if query else path


class Embedder:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.docs: dict[str, Any] = {}
        self.blobs: dict[str, str] = {}  # binary answers, gzipped, in base64

    def add(self, path: str, **params: str) -> Any:
        response = self.api.get(path, {k: [v] for k, v in params.items()})
        if response.status != 200:
            return None
        key = request_key(path, params)
        if response.content_type == JSON_TYPE:
            doc = json.loads(response.body)
            self.docs[key] = doc
            return doc
        packed = response.gzipped or gzip.compress(response.body, mtime=0)
        self.blobs[key] = base64.b64encode(packed).decode()
        return None


def collect(api: Api, run_id: int, compare: int | None) -> dict:
    """Every API answer the report's pages need for one run (and a comparison)."""
    emb = Embedder(api)
    base = f"/api/runs/{run_id}"
    overview = emb.add(base)
    runs = emb.add("/api/runs")
    wanted = {str(run_id), str(compare)}
    emb.docs["/api/runs"] = [r for r in runs or [] if r["id"] in wanted]
    for by in ("function", "line", "file", "dso"):
        emb.add(f"{base}/top", by=by)
    emb.add(f"{base}/flame")
    findings = emb.add(f"{base}/findings")
    emb.add(f"{base}/experiments")
    emb.add(f"{base}/cache")
    emb.add("/api/experiments")
    top = api.get(f"{base}/top", {})
    rows = json.loads(top.body)["rows"] if top.status == 200 else []
    by_total = sorted(rows, key=lambda r: -r["total"])[:TOP_FUNCTIONS]
    noted = (findings or {}).get("findings", [])
    for name in {r["function"] for r in by_total} | {f.get("function", "") for f in noted}:
        if name:
            emb.add(f"{base}/callgraph", function=name)
    for name in [r["function"] for r in rows[:ANNOTATED_FUNCTIONS]] + [
        f.get("function", "") for f in noted
    ]:
        if name:
            emb.add(f"{base}/annotate", function=name)
    for file in {f.get("file", "") for f in noted}:
        if file:
            emb.add(f"{base}/source", file=file)
    if compare is not None:
        emb.add(f"/api/runs/{compare}")
        emb.add("/api/diff", a=str(compare), b=str(run_id), by="function")
        emb.add("/api/diff/flame", a=str(compare), b=str(run_id))
    start = f"#/compare?a={compare}&b={run_id}" if compare is not None else f"#/run/{run_id}"
    return {"docs": emb.docs, "blobs": emb.blobs, "start": start, "overview": overview}


def html(data: dict, static: Path | None = None) -> str:
    root = static or static_root()
    index = root / "index.html"
    if not index.is_file():
        raise UserError("the web UI is not built, so no HTML report can be made: run `make ui`")
    page = index.read_text(encoding="utf-8")
    script = SCRIPT_TAG.search(page)
    style = STYLE_TAG.search(page)
    if not script:
        raise UserError(f"{index} has no module script; rebuild the UI with `make ui`")
    js = _asset(root, script.group(1)).replace("</script", "<\\/script")
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    inline = (
        f'<script type="application/json" id="perfsleuth-data">{payload}</script>\n'
        f'<script type="module">{js}</script>'
    )
    page = page[: script.start()] + inline + page[script.end() :]
    if style:
        css = _asset(root, style.group(1)).replace("</style", "<\\/style")
        page = page.replace(style.group(0), f"<style>{css}</style>")
    csp = f'<meta http-equiv="Content-Security-Policy" content="{REPORT_CSP}">'
    return page.replace("<head>", f"<head>\n{csp}", 1)


def _asset(root: Path, href: str) -> str:
    path = (root / href.lstrip("./")).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        raise UserError(f"the built UI misses {href}; rebuild it with `make ui`")
    return path.read_text(encoding="utf-8")
