"""perfsleuth fleet status|top|flame|diff|series|advise|watch|libraries|compact|expire.

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
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..fleet.engines import DEFAULT_SPARK_MASTER, ENGINES, engine_of
from ..fleet.filters import with_type
from ..model.fleet import PROFILE_TYPES
from ..present import PROFILE, TitledProfile, formats_for, write
from ..present.json import FLEET_FLAME
from ..symbols.debuginfod import server_urls
from ..views.keys import FLEET_TOP_GROUPINGS, GROUPINGS, fleet_top_grouping

if TYPE_CHECKING:
    from ..fleet import trends
    from ..fleet.engine import Engine
    from ..store.fleet import FleetStore

NAME = "fleet"
HELP = "the fleet store: status, queries (top, flame, diff, series), advise, watch, upkeep"
DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
LAST_TIME = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """--store and --endpoint, as every command on the fleet store takes them."""
    parser.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="PATH_OR_URL",
        help="the fleet store: a folder or s3://bucket/prefix (default: .perfsleuth/fleet)",
    )
    parser.add_argument(
        "--endpoint", metavar="URL", help="S3 endpoint (default: $AWS_ENDPOINT_URL)"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, help_text, add, handler in (
        ("status", "hosts seen, their last push and metrics, store size", _add_status, _status),
        ("top", "top functions over the fleet (perfsleuth top's shape)", _add_top, _top),
        ("flame", "folded stacks or an HTML flame graph over the fleet", _add_flame, _flame),
        ("diff", "what grew between two ranges or two label sets", _add_diff, _diff),
        ("series", "a function's share per time bucket", _add_series, _series),
        ("advise", "the advisor's findings over the fleet, by cores saved", _add_advise, _advise),
        ("watch", "alert a webhook when a fix would pay or a share grew", _add_watch, _watch),
        ("libraries", "where replaceable libraries are loaded, and if hot", _add_libs, _libs),
        ("compact", "merge small files, dedupe stacks, write rollups", _add_none, _compact),
        ("expire", "delete partitions older than a duration", _add_expire, _expire),
    ):
        verb = verbs.add_parser(name, help=help_text, description=help_text)
        add_store_arguments(verb)
        add(verb)
        verb.set_defaults(fleet_handler=handler, debuginfod=None)  # verbs without --debuginfod


def run(args: argparse.Namespace) -> int:
    from ..store.fleet import FleetStore, fleet_root

    handler: Callable[[argparse.Namespace, FleetStore], int] = args.fleet_handler
    if getattr(args, "type", None):
        args.where = with_type(args.where, args.type)
    servers = server_urls(args.debuginfod)
    store = FleetStore(fleet_root(args.store), args.endpoint, servers)
    try:
        return handler(args, store)
    finally:
        for note in store.late_symbols.notes:
            print(f"perfsleuth: warning: {note}", file=sys.stderr)


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
    parser.add_argument(
        "--type",
        choices=list(PROFILE_TYPES),
        help="the profile type: cpu (default), wall, alloc_objects, alloc_space, "
        "inuse_objects, inuse_space, mutex_/block_contentions, mutex_/block_delay, goroutines",
    )
    parser.add_argument(
        "--debuginfod",
        metavar="URLS",
        help="debuginfod servers (space-separated) to fetch the debug info of frames the "
        "hosts could not name, kept in the store once fetched (default: $DEBUGINFOD_URLS)",
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
    parser.add_argument(
        "--by",
        type=_top_grouping,
        default="function",
        metavar="{" + ",".join(FLEET_TOP_GROUPINGS) + ",label:NAME}",
        help="library: DSOs by library name; service, host or label:NAME (any label, e.g. "
        "label:version): each value's share of the CPU time",
    )
    parser.add_argument("-n", type=int, default=20, help="rows to show (0 = all)")
    add_engine_options(parser)
    _add_output(parser, "fleet-top")


def _top_grouping(text: str) -> str:
    try:
        return fleet_top_grouping(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"bad --by {text!r}: ")) from None


def _add_flame(parser: argparse.ArgumentParser) -> None:
    _add_range(parser)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--folded", action="store_true", help="folded stacks (the default)")
    kind.add_argument("--html", metavar="FILE", help="write an interactive HTML flame graph")
    kind.add_argument(
        "--format",
        choices=("folded", "json"),
        default="folded",
        help="folded stacks, or JSON: each stack's frames (root first), CPU ns and samples",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the stacks to FILE")
    add_engine_options(parser)


def _add_diff(parser: argparse.ArgumentParser) -> None:
    _add_range(parser)
    side = (
        "a time range FROM..TO (times as --from) or labels k=v,... over --from/--to; "
        "default: A the range before --from/--to, B the range itself"
    )
    parser.add_argument("--a", metavar="SIDE", help=side)
    parser.add_argument("--b", metavar="SIDE", help="as --a")
    parser.add_argument("--by", choices=GROUPINGS, default="function")
    parser.add_argument("-n", type=int, default=30, help="rows to show (0 = all)")
    add_engine_options(parser)
    _add_output(parser, "fleet-diff")


def _add_series(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("function", metavar="FUNC", help="function name (any DSO)")
    _add_range(parser)
    parser.add_argument(
        "--step", type=parse_duration, metavar="DURATION", help="bucket length (default: ~24)"
    )
    add_engine_options(parser)
    _add_output(parser, "fleet-series")


def _add_advise(parser: argparse.ArgumentParser) -> None:
    _add_range(parser)
    parser.add_argument(
        "--core-cost", type=float, metavar="USD", help="cost of one core for a month: adds money"
    )
    _add_rules(parser)
    parser.add_argument(
        "--verified",
        action="append",
        default=[],
        metavar="FILE",
        help="attach a measured result: the JSON of `perfsleuth try allocator|build --format "
        "json -o FILE` (repeatable); it goes to the findings of its kind running that program",
    )
    parser.add_argument("--all", action="store_true", help="show findings below the noise floor")
    add_engine_options(parser)
    _add_output(parser, "fleet-advice")


def _add_rules(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules", action="append", default=[], metavar="FILE", help="more library rules (TOML)"
    )


def _add_watch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", required=True, metavar="FILE", help="alert rules (TOML)")
    parser.add_argument("--webhook", required=True, metavar="URL", help="POST alerts here (JSON)")
    parser.add_argument("--interval", type=float, default=60.0, metavar="S", help="default 60")
    parser.add_argument("--once", action="store_true", help="evaluate once and exit")
    parser.add_argument(
        "--state", metavar="FILE", help="what was sent (default: RULES with .state.json)"
    )
    parser.add_argument("--to", dest="end", type=parse_time, help="evaluate at (default: now)")
    add_engine_options(parser)


def _add_libs(parser: argparse.ArgumentParser) -> None:
    _add_range(parser)
    parser.add_argument("--hot", action="store_true", help="only the libraries that are hot")
    _add_rules(parser)
    add_engine_options(parser)
    _add_output(parser, "fleet-libraries")


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
    from ..fleet import queries

    doc = queries.top(
        store, args.start, args.end, args.where, args.by, args.n, args.sort, query_engine(args)
    )
    write("fleet-top", doc, args.format, args.output)
    return 0


def _flame(args: argparse.Namespace, store: FleetStore) -> int:
    from ..fleet import queries

    start, end = queries.time_range(args.start, args.end)
    profile = queries.flame(store, start, end, args.where, query_engine(args))
    if not profile.sample_stack:
        raise UserError("no samples in this range: widen --from/--to or relax --where")
    where = f" where {args.where}" if args.where else ""
    doc = TitledProfile(profile, f"fleet {store.root}{where}")
    if args.html:
        write(PROFILE, doc, "html", args.html)
        print(f"perfsleuth: wrote {args.html}", file=sys.stderr)
    elif args.format == "json":
        stacks = queries.flame_json(profile, start, end, args.where)
        write(FLEET_FLAME, stacks, "json", args.output)
    else:
        write(PROFILE, doc, "folded", args.output)
    return 0


def _diff(args: argparse.Namespace, store: FleetStore) -> int:
    from ..fleet import queries, trends

    start, end = queries.time_range(args.start, args.end)
    a = _side(args.a, args.where, start, end, previous=True)
    b = _side(args.b, args.where, start, end, previous=False)
    doc = trends.diff(store, a, b, by=args.by, n=args.n, engine=query_engine(args))
    write("fleet-diff", doc, args.format, args.output)
    return 0


def _side(
    spec: str | None, where: str | None, start: float, end: float, *, previous: bool
) -> trends.Side:
    """--a/--b: FROM..TO, or labels over the range; none: the range (A: the one before)."""
    from ..fleet import queries, trends

    if spec and ".." in spec:
        first, _, last = spec.partition("..")
        try:
            s, e = parse_time(first), parse_time(last)
        except argparse.ArgumentTypeError as err:
            raise UserError(f"bad side {spec!r}: {err}") from None
        s, e = queries.time_range(s, e)
        return trends.Side(s, e, where or "")
    filters = ",".join(f for f in (where, spec) if f)
    if spec or not previous:
        return trends.Side(start, end, filters)
    return trends.Side(2 * start - end, start, filters)


def _series(args: argparse.Namespace, store: FleetStore) -> int:
    from ..fleet import queries, trends

    start, end = queries.time_range(args.start, args.end)
    engine = query_engine(args)
    doc = trends.series(
        store, args.function, start, end, where=args.where, step=args.step, engine=engine
    )
    write("fleet-series", doc, args.format, args.output)
    return 0


def _advise(args: argparse.Namespace, store: FleetStore) -> int:
    from ..fleet import advice, queries, verified

    start, end = queries.time_range(args.start, args.end)
    options = advice.FleetAdvice(
        core_cost=args.core_cost,
        rules=_rule_files(args),
        show_all=args.all,
        engine=query_engine(args),
        verified=[verified.load(Path(p)) for p in args.verified],
    )
    doc = advice.advise(store, start, end, args.where, options)
    write("fleet-advice", doc, args.format, args.output)
    return 0


def _rule_files(args: argparse.Namespace) -> list[Path]:
    files = [Path(p) for p in args.rules]
    for path in files:
        if not path.is_file():
            raise UserError(f"--rules {path}: no such file")
    return files


def _watch(args: argparse.Namespace, store: FleetStore) -> int:
    from ..fleet import alerts

    rules_path = Path(args.rules)
    rules = alerts.load_rules(rules_path, parse_duration)
    state = alerts.State(Path(args.state) if args.state else rules_path.with_suffix(".state.json"))
    engine = query_engine(args)
    try:
        while True:
            now = args.end or time.time()
            done = alerts.watch_once(store, rules, args.webhook, state, now, engine)
            for alert in done.sent:
                print(f"perfsleuth: sent {alert.key} ({alert.value:.3g})", file=sys.stderr)
            for problem in done.skipped + done.failed:
                print(f"perfsleuth: {problem}", file=sys.stderr)
            if args.once:
                return 1 if done.failed else 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


def _libs(args: argparse.Namespace, store: FleetStore) -> int:
    from ..fleet import libraries, queries

    start, end = queries.time_range(args.start, args.end)
    doc = libraries.libraries(
        store, start, end, args.where, _rule_files(args), args.hot, query_engine(args)
    )
    write("fleet-libraries", doc, args.format, args.output)
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
    """Unix seconds of `now`, a duration ago, unix seconds, or ISO 8601 (UTC by default),
    from 1970 to 9999."""
    moment = _moment(text.strip())
    if not 0 <= moment < LAST_TIME:
        raise argparse.ArgumentTypeError(
            f"bad time {text[:40]!r}: give a time from 1970 to 9999 (unix seconds 0 to "
            f"{LAST_TIME:.0f}), ISO 8601, now, or a duration ago like 2h"
        )
    return moment


def _moment(text: str) -> float:
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
            f"bad time {text[:40]!r}: give unix seconds, ISO 8601, now, or a duration ago like 2h"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
