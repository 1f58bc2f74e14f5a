"""perfsleuth agent: sample every process of this host continuously, push windows to a collector."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import urlparse

from ..agent.config import DEFAULT_MAX_CPU_SHARE, DEFAULT_PYTHON_PROCESSES, AgentConfig
from ..errors import UserError

NAME = "agent"
HELP = "profile the whole host continuously and push windows to a collector (needs root)"

LABEL_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")
# Label values travel in Pyroscope's name=SERVICE{k=v,...}: these would break it.
BAD_VALUE = re.compile(r"[,{}=\s]")
RESERVED = {"pid", "comm", "exe", "build_id", "cgroup"}  # per sample, read by the agent


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", required=True, help="collector URL, e.g. http://HOST:4040")
    parser.add_argument("--token", help="bearer token the collector expects")
    parser.add_argument(
        "--freq", type=int, default=19, help="samples per second per CPU (default %(default)s)"
    )
    parser.add_argument(
        "--labels",
        default="",
        metavar="k=v,...",
        help="labels of every sample, e.g. service=api,version=1.4,environment=prod "
        "(host is this host's name; service defaults to 'system')",
    )
    parser.add_argument(
        "--window", type=int, default=20, metavar="S", help="seconds per window (default 20)"
    )
    parser.add_argument(
        "--spool",
        type=Path,
        default=Path("/var/lib/perfsleuth/agent"),
        metavar="DIR",
        help="where windows wait for the collector (default %(default)s)",
    )
    parser.add_argument(
        "--max-spool-mb",
        type=int,
        default=256,
        metavar="N",
        help="spool size limit; past it the oldest windows are dropped (default %(default)s)",
    )
    parser.add_argument(
        "--call-graph",
        choices=("dwarf", "fp"),
        default="dwarf",
        help="dwarf (default): correct stacks for binaries built without frame pointers; "
        "fp: cheaper, when every binary keeps frame pointers",
    )
    parser.add_argument(
        "--python-processes",
        type=int,
        default=DEFAULT_PYTHON_PROCESSES,
        metavar="N",
        help="CPython processes sampled with py-spy at once, the busiest first, for their "
        "Python frames (default %(default)s; 0: perf's native frames only)",
    )
    parser.add_argument(
        "--python-match",
        default="",
        metavar="REGEX",
        help="only CPython processes whose command line matches REGEX get Python frames "
        "(default: any; e.g. 'gunicorn|celery')",
    )
    parser.add_argument(
        "--max-cpu",
        type=float,
        metavar="PERCENT",
        default=DEFAULT_MAX_CPU_SHARE * 100,
        help="the agent's CPU cap, its perf's included, in percent of the host's CPUs "
        "(default %(default)g; 0: no cap): new addresses are named as it spares CPU, the "
        "most sampled first, the rest sent unnamed (build-id + address, named later by "
        "`symbols upload` or debuginfod); nearing it, py-spy runs only on the processes "
        "--python-match names (without it, on the busiest service when a run fits), then "
        "only the hottest new addresses are named, and last windows are left out "
        "(thinned); the log and the posted status say each step",
    )


def run(args: argparse.Namespace) -> int:
    from ..agent.daemon import Agent  # perf's reader, pprof, symbolizers: not for --help

    return Agent(config(args)).run()


def config(args: argparse.Namespace) -> AgentConfig:
    url = urlparse(args.server)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise UserError(f"bad --server {args.server!r}: give the collector's URL, http://HOST:PORT")
    if not 1 <= args.freq <= 10_000:
        raise UserError(f"bad --freq {args.freq}: use 1..10000 samples per second per CPU")
    if not 1 <= args.window <= 3600:
        raise UserError(f"bad --window {args.window}: use 1..3600 seconds")
    if args.max_spool_mb < 1:
        raise UserError(f"bad --max-spool-mb {args.max_spool_mb}: use at least 1")
    if not 0 <= args.python_processes <= 64:
        raise UserError(f"bad --python-processes {args.python_processes}: use 0..64")
    try:
        re.compile(args.python_match)
    except re.error as e:
        raise UserError(f"bad --python-match {args.python_match!r}: {e}") from None
    if not 0 <= args.max_cpu <= 100:
        raise UserError(f"bad --max-cpu {args.max_cpu:g}: use a percent, 0..100 (0: no cap)")
    return AgentConfig(
        server=args.server,
        spool=args.spool,
        token=args.token,
        freq=args.freq,
        window_s=args.window,
        max_spool_bytes=args.max_spool_mb << 20,
        call_graph=args.call_graph,
        labels=parse_labels(args.labels),
        python_processes=args.python_processes,
        python_match=args.python_match,
        max_cpu_share=args.max_cpu / 100 or None,
    )


def parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not LABEL_KEY.fullmatch(key) or not value or BAD_VALUE.search(value):
            raise UserError(
                f"bad label {item!r}: use k=v,... with keys of letters, digits, _ and values "
                "without , { } = or spaces"
            )
        if key in RESERVED:
            raise UserError(f"label {key!r} is set per sample by the agent: pick another name")
        labels[key] = value
    return labels
