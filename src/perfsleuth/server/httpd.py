"""The HTTP server: the built UI's static files and the API, on the standard library.

A local profiler UI serves one person a handful of requests at a time, so the
standard library's threaded server is enough and adds no dependency; the work
that matters (caching computed views) lives in api.Api.
"""

from __future__ import annotations

import hmac
import ipaddress
import mimetypes
import socket
import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from .api import Api, Response, json_response

# The UI draws with canvas and builds its DOM with textContent: it needs no inline
# script and no other origin, so a strict policy costs nothing and stops injection.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
LOOPBACK_NAMES = ("localhost",)


def static_root() -> Path:
    return Path(str(resources.files("perfsleuth.server").joinpath("static")))


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: Api, token: str | None) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.api = api
        self.token = token
        self.static = static_root()


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes: without this, Nagle's algorithm
    # and the client's delayed ACK add ~40 ms to every small response.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        url = urlsplit(self.path)
        try:
            if url.path.startswith("/api/"):
                response = self._api(url.path, parse_qs(url.query, keep_blank_values=True))
            else:
                response = self._static(url.path)
        except Exception as e:  # a bug: answer it as one, keep serving
            traceback.print_exc(file=sys.stderr)
            response = json_response({"error": f"internal error ({type(e).__name__}): {e}"}, 500)
        self._send(response)

    def do_POST(self) -> None:  # noqa: N802
        self._send(json_response({"error": "the API is read-only: use GET"}, 405))

    do_PUT = do_DELETE = do_PATCH = do_POST

    def _api(self, path: str, query: dict[str, list[str]]) -> Response:
        given = query.pop("token", [""])[0]
        if self.server.token is None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            if not is_loopback(host):
                # A page on another site that resolves its name to 127.0.0.1
                # (DNS rebinding) must not read the store.
                return json_response({"error": f"host {host!r} is not allowed"}, 403)
        else:
            auth = self.headers.get("Authorization", "")
            given = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else given
            if not hmac.compare_digest(given.encode(), self.server.token.encode()):
                return json_response(
                    {"error": "missing or wrong token: open the URL serve printed"}, 401
                )
        return self.server.api.get(path, query)

    def _static(self, path: str) -> Response:
        root = self.server.static.resolve()
        name = "index.html" if path in ("", "/") else path.lstrip("/")
        target = (root / name).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            if not (root / "index.html").is_file():
                message = b"The web UI is not built: run `make ui`. The API is at /api/runs."
                return Response(404, "text/plain; charset=utf-8", message)
            return Response(404, "text/plain; charset=utf-8", b"not found")
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind.endswith("javascript"):
            kind += "; charset=utf-8"
        return Response(200, kind, target.read_bytes())

    def _send(self, response: Response) -> None:
        body = response.body
        # On loopback, sending 15 MB raw is faster than the browser inflating 3 MB.
        compressed = (
            response.gzipped is not None
            and "gzip" in self.headers.get("Accept-Encoding", "")
            and not is_loopback(self.client_address[0])
        )
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        if compressed and response.gzipped is not None:
            body = response.gzipped
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", CSP)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        if self.server.api.verbose:
            print(f"perfsleuth serve: {format % args}", file=sys.stderr)
