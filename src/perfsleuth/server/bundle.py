"""The API answers the single-file report embeds (present/html.py makes the page).

The page runs from file:// with no server: the UI looks every request up in the
embedded documents, under the same keys as the API's path and parameters.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any
from urllib.parse import urlencode

from ..views.keys import GROUPINGS
from .api import JSON_TYPE, Api

TOP_FUNCTIONS = 40
ANNOTATED_FUNCTIONS = 25


Param = str | list[str]


def request_key(path: str, params: dict[str, Param]) -> str:
    """The lookup key the UI computes for a request (ui/src/api.ts requestKey): values
    of a repeated parameter joined by commas."""
    query = "&".join(f"{k}={_joined(params[k])}" for k in sorted(params) if params[k])
    return f"{path}?{query}" if query else path


def _joined(value: Param) -> str:
    return ",".join(value) if isinstance(value, list) else value


class Embedder:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.docs: dict[str, Any] = {}
        self.blobs: dict[str, str] = {}  # binary answers, gzipped, in base64

    def add(self, path: str, **params: Param) -> Any:
        query = {k: v if isinstance(v, list) else [v] for k, v in params.items() if v}
        response = self.api.get(path, query)
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


def missing_sources(collected: dict) -> list[str]:
    """The source files the report's pages name but could not embed (not under a root)."""
    missing = set()
    for key, doc in collected["docs"].items():
        path = key.split("?", 1)[0]
        files = doc.get("files", []) if path.endswith("/annotate") else [doc]
        if path.endswith(("/annotate", "/source")):
            missing |= {f["file"] for f in files if f.get("file") and not f.get("found")}
    return sorted(missing)


def collect(api: Api, run_id: int, compare: int | None) -> dict:
    """Every API answer the report's pages need for one run (and a comparison)."""
    emb = Embedder(api)
    base = f"/api/runs/{run_id}"
    overview = emb.add(base)
    runs = emb.add("/api/runs")
    emb.add("/api/choices")
    wanted = {str(run_id), str(compare)}
    emb.docs["/api/runs"] = [r for r in runs or [] if r["id"] in wanted]
    for by in GROUPINGS:
        emb.add(f"{base}/top", by=by)
    emb.add(f"{base}/flame")
    emb.add(f"{base}/threads")
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
            emb.add(f"{base}/disasm", function=name)
    for file in {f.get("file", "") for f in noted}:
        if file:
            emb.add(f"{base}/source", file=file)
    if compare is not None:
        emb.add(f"/api/runs/{compare}")
        emb.add("/api/diff", a=str(compare), b=str(run_id), by="function")
        emb.add("/api/diff/flame", a=str(compare), b=str(run_id))
    start = f"#/compare?a={compare}&b={run_id}" if compare is not None else f"#/run/{run_id}"
    return {"docs": emb.docs, "blobs": emb.blobs, "start": start, "overview": overview}


def collect_flame(api: Api, run_id: int, states: list[str], tids: list[int]) -> dict:
    """The answers of one run's flame graph page (`flame --html`), with its filters."""
    emb = Embedder(api)
    base = f"/api/runs/{run_id}"
    overview = emb.add(base)
    runs = emb.add("/api/runs")
    emb.docs["/api/runs"] = [r for r in runs or [] if r["id"] == str(run_id)]
    emb.add("/api/choices")
    threads = [str(t) for t in tids]
    emb.add(f"{base}/flame", state=states, thread=threads)
    emb.add(f"{base}/timeline", thread=threads)
    query = urlencode([("state", s) for s in states] + [("thread", t) for t in threads])
    start = f"#/run/{run_id}/flame" + (f"?{query}" if query else "")
    return {"docs": emb.docs, "blobs": emb.blobs, "start": start, "overview": overview}
