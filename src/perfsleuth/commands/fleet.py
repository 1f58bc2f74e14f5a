"""perfsleuth fleet status|top|flame|compact|expire: the fleet store and queries over it.

`--store` after the verb names the fleet store: a folder or s3://bucket/prefix; a run
store folder (the default .perfsleuth) means its fleet/ subfolder (store.fleet.fleet_root).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from ..errors import UserError
from ..fleet import queries
from ..fleet.engine import Engine
from ..fleet.engines import DEFAULT_SPARK_MASTER, ENGINES, engine_of
from ..present import PROFILE, TitledProfile, formats_for, write
from ..store.fleet import FleetStore, fleet_root
from ..views.keys import GROUPINGS

NAME = "fleet"
HELP = "the fleet store: status, top, flame, compact, expire"
DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, help_text, add, handler in (
        ("status", "hosts seen, their last push and metrics, store size", _add_status, _status),
        ("top", "top functions over the fleet (perfsleuth top's shape)", _add_top, _top),
        ("flame", "folded stacks or an HTML flame graph over the fleet", _add_flame, _flame),
        ("compact", "merge small files, dedupe stacks, write rollups", _add_none, _compact),
        ("expire", "delete partitions older than a duration", _add_expire, _expire),
    ):
        verb = verbs.add_parser(name, help=help_text, description=help_text)
        verb.add_argument(
            "--store",
            default=argparse.SUPPRESS,
            metavar="PATH_OR_URL",
            help="the fleet store: a folder or s3://bucket/prefix (default: .perfsleuth/fleet)",
        )
        verb.add_argument(
            "--endpoint", metavar="URL", help="S3 endpoint (default: $AWS_ENDPOINT_URL)"
        )
        add(verb)
        verb.set_defaults(fleet_handler=handler)


def run(args: argparse.Namespace) -> int:
    handler: Callable[[argparse.Namespace, FleetStore], int] = args.fleet_handler
    return handler(args, FleetStore(fleet_root(args.store), args.endpoint))


def _add_none(parser: argparse.ArgumentParser) -> None:
    pass


def _add_range(parser: argparse.ArgumentParser) -> None:
    when = "unix seconds, ISO 8601 (UTC unless it says), now, or a duration ago (90m, 2h, 7d)"
    parser.add_argument("--from", dest="start", type=parse_time, help=f"{when}; default: 1h ago")
    parser.add_argument("--to", dest="end", type=parse_time, help=f"{when}; default: now")
    parser.add_argument(
        "--where",
        metavar="FILTER",
        help="labels: k=v,k!=v,k=~regex,k!~regex (host, service, pid, comm, exe, build_id,"
        " cgroup or any user label)",
    )


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """--engine and --spark-master: every fleet query takes them (query_engine reads them)."""
    parser.add_argument(
        "--engine", choices=ENGINES, default="duckdb", help="query engine (default: duckdb)"
    )
    parser.add_argument(
        "--spark-master",
        default=DEFAULT_SPARK_MASTER,
        metavar="URL",
        help=f"with --engine spark: local[N] or spark://HOST:PORT (default {DEFAULT_SPARK_MASTER})",
    )


def query_engine(args: argparse.Namespace) -> Engine:
    return engine_of(args.engine, args.spark_master, args.endpoint)


def _add_output(parser: argparse.ArgumentParser, document: str) -> None:
    formats = formats_for(document)
    parser.add_argument("--format", choices=formats, default=formats[0])
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def _add_status(parser: argparse.ArgumentParser) -> None:
    _add_output(parser, "fleet-status")


def _add_top(parser: argparse.ArgumentParser) -> None:
    _add_range(parser)
    order = parser.add_mutually_exclusive_group()
    order.add_argument("--self", dest="sort", action="store_const", const="self", default="self")
    order.add_argument("--total", dest="sort", action="store_const", const="total")
    parser.add_argument("--by", choices=GROUPINGS, default="function")
    parser.add_argument("-n", type=int, default=20, help="rows to show (0 = all)")
    add_engine_options(parser)
    _add_output(parser, "fleet-top")


def _add_flame(parser: argparse.ArgumentParser) -> None:
    _add_range(parser)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--folded", action="store_true", help="folded stacks (default)")
    kind.add_argument("--html", metavar="FILE", help="write an interactive HTML flame graph")
    parser.add_argument("-o", "--output", metavar="FILE", help="write folded stacks to FILE")
    add_engine_options(parser)


def _add_expire(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--older-than",
        required=True,
        type=parse_duration,
        metavar="DURATION",
        help="drop hour partitions that ended longer ago than this (30d, 12h)",
    )


def _status(args: argparse.Namespace, store: FleetStore) -> int:
    write("fleet-status", store.status(), args.format, args.output)
    return 0


def _top(args: argparse.Namespace, store: FleetStore) -> int:
    doc = queries.top(
        store, args.start, args.end, args.where, args.by, args.n, args.sort, query_engine(args)
    )
    write("fleet-top", doc, args.format, args.output)
    return 0


def _flame(args: argparse.Namespace, store: FleetStore) -> int:
    profile = queries.flame(store, args.start, args.end, args.where, query_engine(args))
    if not profile.sample_stack:
        raise UserError("no samples in this range: widen --from/--to or relax --where")
    where = f" where {args.where}" if args.where else ""
    doc = TitledProfile(profile, f"fleet {store.root}{where}")
    if args.html:
        write(PROFILE, doc, "html", args.html)
        print(f"perfsleuth: wrote {args.html}", file=sys.stderr)
    else:
        write(PROFILE, doc, "folded", args.output)
    return 0


def _compact(args: argparse.Namespace, store: FleetStore) -> int:
    done = store.compact()
    print(
        f"perfsleuth: compacted {done.partitions} partitions of {store.root}: "
        f"{done.files_before} files -> {done.files_after}",
        file=sys.stderr,
    )
    return 0


def _expire(args: argparse.Namespace, store: FleetStore) -> int:
    dropped = store.expire(time.time() - args.older_than)
    print(f"perfsleuth: dropped {len(dropped)} hour partitions of {store.root}", file=sys.stderr)
    return 0


def parse_duration(text: str) -> float:
    """Seconds of `30d`, `12h`, `90m`, `45s`."""
    match = DURATION.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"bad duration {text!r}: write e.g. 30d, 12h, 90m")
    return float(match[1]) * SECONDS[match[2]]


def parse_time(text: str) -> float:
    """Unix seconds of `now`, a duration ago, unix seconds, or ISO 8601 (UTC by default)."""
    text = text.strip()
    if text == "now":
        return time.time()
    if DURATION.fullmatch(text):
        return time.time() - parse_duration(text)
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad time {text!r}: give unix seconds, ISO 8601, now, or a duration ago like 2h"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
