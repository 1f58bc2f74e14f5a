"""The HTTP side of `perfsleuth serve`: the built UI's static files and the API, as an
app of the shared HTTP stack (web/: Starlette under uvicorn), which bounds the backlog,
connections, idle time and request sizes, checks the Host header on loopback, and lets
clients leave quietly. The work that matters (caching computed views) lives in api.Api.

The UI's files are open (the browser loads the page before it knows the token); every
API request carries the token, as `Authorization: Bearer T` or `?token=T`.

The API is read-only but for one POST, advising a run from its page. A POST must carry
the X-Perfsleuth header: another site's page can send one only after a CORS preflight,
which this server never grants, so it cannot make a visitor's browser start one (CSRF).
"""

from __future__ import annotations

import hmac
import mimetypes
import sys
import traceback
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response as HttpResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from ..web.app import Limits, create_app, is_loopback
from .api import Api, Query, Response, json_response

# The UI draws with canvas and builds its DOM with textContent: it needs no inline
# script and no other origin, so a strict policy costs nothing and stops injection.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
# A GET API: no request body is read, so the body limit only bounds what is refused.
LIMITS = Limits(max_body=64 << 10, concurrency=512, max_idle=64)
POST_HEADER = "x-perfsleuth"
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"]


def static_root() -> Path:
    return Path(str(resources.files("perfsleuth.server").joinpath("static")))


def create(api: Api, token: str | None, *, loopback: bool, static: Path | None = None) -> ASGIApp:
    """The app serving the UI from `static` and the API, for a loopback listener or not."""
    site = _Site(api, token or None, static or static_root())
    routes = [
        Route("/api/{rest:path}", site.api, methods=METHODS),
        Route("/{rest:path}", site.static, methods=METHODS),
    ]
    return create_app(routes, tokens=(), loopback=loopback, limits=LIMITS)


class _Site:
    def __init__(self, api: Api, token: str | None, static: Path) -> None:
        self.api_ = api
        self.token = token
        self.root = static.resolve()

    async def api(self, request: Request) -> HttpResponse:
        query = parse_qs(request.url.query, keep_blank_values=True)
        given = query.pop("token", [""])[0]
        response = self._refusal(request, given)
        if response is None:
            answer = self._answer_post if request.method == "POST" else self._answer
            response = await run_in_threadpool(answer, _raw_path(request), query)
        return _send(response, request)

    async def static(self, request: Request) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return _send(_read_only(), request)
        return _send(await run_in_threadpool(self._file, _raw_path(request)), request)

    def _refusal(self, request: Request, given: str) -> Response | None:
        if request.method == "POST" and self.api_.accepts_post(_raw_path(request)):
            if POST_HEADER not in request.headers:
                return json_response({"error": "a POST needs the X-Perfsleuth header"}, 403)
        elif request.method not in ("GET", "HEAD"):
            return _read_only()
        if self.token is None:
            return None
        auth = request.headers.get("authorization", "")
        given = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else given
        if hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        return json_response({"error": "missing or wrong token: open the URL serve printed"}, 401)

    def _answer(self, path: str, query: dict[str, list[str]]) -> Response:
        return self._safely(self.api_.get, path, query)

    def _answer_post(self, path: str, query: dict[str, list[str]]) -> Response:
        return self._safely(self.api_.post, path, query)

    @staticmethod
    def _safely(handle: Callable[[str, Query], Response], path: str, query: Query) -> Response:
        try:
            return handle(path, query)
        except Exception as e:  # a bug: answer it as one, keep serving
            traceback.print_exc(file=sys.stderr)
            return json_response({"error": f"internal error ({type(e).__name__}): {e}"}, 500)

    def _file(self, path: str) -> Response:
        name = "index.html" if path in ("", "/") else path.lstrip("/")
        target = (self.root / name).resolve()
        if not target.is_relative_to(self.root) or not target.is_file():
            if not (self.root / "index.html").is_file():
                message = b"The web UI is not built: run `make ui`. The API is at /api/runs."
                return Response(404, "text/plain; charset=utf-8", message)
            return Response(404, "text/plain; charset=utf-8", b"not found")
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind.endswith("javascript"):
            kind += "; charset=utf-8"
        return Response(200, kind, target.read_bytes())


def _raw_path(request: Request) -> str:
    """The path as the client sent it, before percent-decoding (as the routes expect)."""
    return request.scope["raw_path"].decode("latin-1").partition("?")[0]


def _read_only() -> Response:
    return json_response({"error": "the API is read-only: use GET (POST only advises a run)"}, 405)


def _send(response: Response, request: Request) -> HttpResponse:
    body = response.body
    headers = {
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": CSP,
    }
    # On loopback, sending 15 MB raw is faster than the browser inflating 3 MB.
    client = request.client.host if request.client else "127.0.0.1"
    if (
        response.gzipped is not None
        and "gzip" in request.headers.get("accept-encoding", "")
        and not is_loopback(client)
    ):
        body = response.gzipped
        headers["Content-Encoding"] = "gzip"
    return HttpResponse(body, response.status, headers, media_type=response.content_type)
