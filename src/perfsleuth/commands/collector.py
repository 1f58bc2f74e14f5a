"""perfsleuth collector: receives agents', Pyroscope, OTLP and pprof pushes into the fleet store."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..collector.cardinality import DEFAULT_MAX_NAMES, DEFAULT_MAX_VALUES
from ..errors import UserError

if TYPE_CHECKING:
    from ..collector.app import Collector
    from ..store.fleet import FleetStore
    from ..store.fleet.head import Head

NAME = "collector"
HELP = "receive profiles from agents, Pyroscope, OTLP and pprof clients into the fleet store"
DEFAULT_LISTEN = "127.0.0.1:4040"
# Bodies of --max-body held in memory at once by the pushes in progress (503 past it):
# a push waits for one of collector.app.WORKERS decoding threads with its body in memory.
BUFFERED_BODIES = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--store (every command's) names the fleet store: .perfsleuth/ means .perfsleuth/fleet/."""
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help="address to listen on (default %(default)s; off loopback, --token is required)",
    )
    parser.add_argument(
        "--grpc",
        metavar="HOST:PORT",
        help="gRPC (OTLP profiles, Pyroscope's push), served on the --listen port too, "
        "also on this address: OTLP's gRPC port is 4317 (default: the --listen port only)",
    )
    parser.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="T",
        help="a token clients send as `Authorization: Bearer T` (repeatable)",
    )
    parser.add_argument(
        "--max-body",
        type=float,
        default=32,
        metavar="MB",
        help="largest request body accepted, also after gzip is inflated (default %(default)g MB)",
    )
    parser.add_argument(
        "--max-label-values",
        type=int,
        default=DEFAULT_MAX_VALUES,
        metavar="N",
        help="distinct values a label may take across pushes, host apart (default %(default)d)",
    )
    parser.add_argument(
        "--max-label-names",
        type=int,
        default=DEFAULT_MAX_NAMES,
        metavar="N",
        help="distinct label names across pushes (default %(default)d)",
    )
    parser.add_argument(
        "--endpoint", metavar="URL", help="S3 endpoint (default: $AWS_ENDPOINT_URL)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    # The HTTP stack and the fleet store load only to receive: `--help` starts without them.
    from ..collector.app import Collector, tune_gc
    from ..collector.cardinality import Cardinality
    from ..collector.grpc_server import GrpcServer
    from ..store.fleet import FleetStore, fleet_root
    from ..web.app import Limits, create_app, is_loopback
    from ..web.run import bind, check_tokens, parse_listen, serve

    host, port = parse_listen(args.listen)
    check_tokens(host, args.token, "a collector")
    grpc_at = parse_listen(args.grpc, "--grpc", "4317") if args.grpc else None
    if grpc_at is not None:
        check_tokens(grpc_at[0], args.token, "a collector's gRPC port")
        if grpc_at[1] == port:
            raise UserError(f"--grpc names the --listen port {port}: gRPC is served there already")
    if not 0 < args.max_body <= 4096:
        raise UserError(f"bad --max-body {args.max_body:g}: use 0 < MB <= 4096")
    if args.max_label_values < 1 or args.max_label_names < 1:
        raise UserError("--max-label-values and --max-label-names must be at least 1")
    max_body = int(args.max_body * (1 << 20))
    limits = Limits(
        max_body=max_body,
        max_inflated=max_body,
        max_buffered=BUFFERED_BODIES * max_body,
    )
    root = fleet_root(args.store)
    store = FleetStore(root, args.endpoint)
    cardinality = Cardinality(args.max_label_values, args.max_label_names)
    cardinality.seed(store.label_values())
    head = store.head()
    collector = Collector(store, head, limits.max_inflated, cardinality)
    app = create_app(
        collector.routes(),
        tokens=args.token,
        loopback=is_loopback(host),
        limits=limits,
        direct=collector.pushes(),
    )
    sock = bind(host, port, limits)
    if grpc_at is not None:
        bind(*grpc_at, limits).close()  # a port in use said now, not once serving
    companion = GrpcServer(collector, args.token, limits, grpc_at)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"perfsleuth: collector on http://{shown}:{sock.getsockname()[1]}/ storing into "
        f"{root} (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    tune_gc()
    # uvloop: the event loop's share of a push (accepting its connection, reading and
    # answering it) cost ~0.6 ms on asyncio's loop in Python, about a third of a
    # fleet push's CPU (bench/ingest_clients.py).
    serve(
        app,
        sock,
        limits,
        verbose=args.verbose,
        on_stop=lambda: _close(collector, store, head),
        fast_loop=True,
        companion=companion,
    )
    return 0


def _close(collector: Collector, store: FleetStore, head: Head) -> None:
    collector.close()  # its pushes' appends finished before the head closes
    try:
        store.close_head(head)
    except UserError as e:
        print(f"perfsleuth: {e}", file=sys.stderr, flush=True)
