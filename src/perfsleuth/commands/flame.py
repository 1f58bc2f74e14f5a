"""perfsleuth flame: folded stacks, or the web UI's flame graph of a run as one HTML file."""

from __future__ import annotations

import argparse
import sys

from ..errors import UserError
from ..present import PROFILE, UI, write
from ..present.html import UiBundle
from .common import add_filter_options, add_run_argument, load_profile, titled_profile

NAME = "flame"
HELP = "flame graph: --folded text or --html FILE"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_argument(parser)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--folded", action="store_true", help="folded stacks (default)")
    kind.add_argument(
        "--html", metavar="FILE", help="write the web UI's flame graph as one self-contained page"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write folded stacks to FILE")
    add_filter_options(parser)


def run(args: argparse.Namespace) -> int:
    if args.html and args.no_inline:
        raise UserError(
            "--no-inline is for folded stacks; the HTML flame graph tags inlined frames"
        )
    store, run_id, profile = load_profile(args)
    if not profile.sample_stack:
        raise UserError(f"run {run_id} has no samples to draw")
    if args.html:
        from ..server import bundle  # the web stack only for --html
        from ..server.api import Api
        from ..server.httpd import static_root

        api = Api(store, [])
        answers = bundle.collect_flame(api, run_id, args.state or [], args.thread or [])
        write(UI, UiBundle(answers, static_root()), "html", args.html)
        print(f"perfsleuth: wrote {args.html}", file=sys.stderr)
    else:
        write(PROFILE, titled_profile(store, run_id, profile), "folded", args.output)
    return 0
