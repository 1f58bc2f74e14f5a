"""perfsleuth serve: the web UI and its JSON HTTP API over the run store."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from ..errors import UserError
from .common import open_store

NAME = "serve"
HELP = "web UI and HTTP API over the store (127.0.0.1 unless --host and --token)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port", type=int, default=8765, help="port (default %(default)s; 0 = any)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    parser.add_argument(
        "--token", help="secret every API request must carry; required off the loopback address"
    )
    parser.add_argument(
        "--src",
        action="append",
        metavar="DIR",
        help="source root the source view may read from (repeatable); a recorded run's own "
        "working directory is one too, an imported or attached run has no other",
    )
    parser.add_argument(
        "--fleet-store",
        metavar="PATH_OR_URL",
        help="the fleet store the Fleet page reads: a folder or s3://bucket/prefix"
        " (default: the store's fleet/ folder)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    # The server's stack (uvicorn, starlette, the APIs) loads only to serve: `--help` and a
    # typo start without it.
    from ..server import httpd
    from ..server.api import Api
    from ..server.fleet_api import FleetApi
    from ..store.fleet import FleetStore, fleet_root
    from ..symbols.debuginfod import server_urls
    from ..web.app import is_loopback
    from ..web.run import bind, check_tokens, serve

    if not 0 <= args.port <= 65535:
        raise UserError(f"bad --port {args.port}: use 0..65535")
    # An empty --token protects nothing: it counts as none (loopback only, Host checked).
    token = args.token or None
    check_tokens(args.host, [token] if token else [], "serving your profiles and sources")
    store = open_store(args)
    api = Api(store, [Path(p) for p in args.src or []], verbose=args.verbose)
    fleet = FleetStore(args.fleet_store or fleet_root(str(store.root)), debuginfod=server_urls())
    FleetApi(fleet).attach(api)
    sock = bind(args.host, args.port, httpd.LIMITS)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    query = "?token=" + token if token else ""
    if not (httpd.static_root() / "index.html").is_file():
        print(
            "perfsleuth: the web UI is not built (run `make ui`); serving the API only",
            file=sys.stderr,
        )
    print(
        f"perfsleuth: serving {store.root}/ at http://{host}:{port}/{query}  (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    if store.db.exists():
        threading.Thread(target=api.warm, args=("latest",), daemon=True).start()
    app = httpd.create(api, token, loopback=is_loopback(args.host))
    serve(app, sock, httpd.LIMITS, verbose=args.verbose)
    return 0
