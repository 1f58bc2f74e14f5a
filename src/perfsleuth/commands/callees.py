"""perfsleuth callees FUNC: what a function calls, and how much each callee costs."""

from __future__ import annotations

import argparse

from .callers import add_arguments as add_arguments
from .callers import show

NAME = "callees"
HELP = "callees of a function, with percentages"
DOCUMENT = "callees"


def run(args: argparse.Namespace) -> int:
    return show(args, DOCUMENT)
