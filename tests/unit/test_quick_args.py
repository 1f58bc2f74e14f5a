"""commands/quick_args.py: the count views' command lines parsed without argparse give the
namespace argparse gives, or are left to argparse."""

import subprocess
import sys
from itertools import product

import pytest

from perfsleuth.cli import build_parser
from perfsleuth.commands import quick_args

LINES = [
    "diff 1 2",
    "diff 1 2 --format json",
    "diff 1 2 --format=json -o out.json",
    "diff 1 --format json 2",
    "diff --format json 1 2",
    "diff latest~1 latest -n 5 --split-recursion",
    "diff 1 2 --by line",
    "diff 1 2 --by nowhere",
    "diff 1 2 --state running --state io --thread 3 --no-inline",
    "diff 1 2 --thread x",
    "diff 1 2 3",
    "diff 1",
    "diff",
    "diff 1 2 --form json",
    "diff 1 2 -n",
    "diff 1 2 -n -5",
    "diff 1 2 -n5",
    "diff 1 2 --split-recursion=yes",
    "diff 1 2 --help",
    "diff 1 2 -- 3",
    "top",
    "top 3 -n 40",
    "top -n 40 3",
    "top -n 40",
    "top --total --by line",
    "top --self --total",
    "top --total --self",
    "top latest~2 --format json --quiet",
    "top 1 2",
    "top 1 --store elsewhere",
    "top --store=elsewhere 1",
    "top --store= 1",
    "top --quiet=1",
    "annotate --all 1 --context 8",
    "annotate --all --context 8",
    "annotate main 1 --context 8",
    "annotate main",
    "annotate --all 1 --threshold 0",
    "annotate --all 1 --threshold x",
    "annotate f --src a --src b --asm",
    "annotate --all 1 2 3",
    "annotate --all --context 8 1",
    "annotate 'a b' 1",
    "annotate '' 1",
    "annotate -f 1",
    "runs",
    "record -- ls",
]
BEFORE = ["", "--store s ", "--quiet ", "--store s --quiet ", "--quiet --store=s ", "--store "]


def argparse_namespace(argv: list[str]) -> dict | str:
    try:
        return vars(build_parser(argv).parse_args(argv))
    except SystemExit as e:
        return f"exit {e.code}"


@pytest.mark.parametrize(("before", "line"), list(product(BEFORE, LINES)))
def test_a_line_parsed_here_is_parsed_as_argparse_parses_it(before, line, capsys):
    import shlex

    argv = shlex.split(before + line)
    quick = quick_args.parse(argv)
    theirs = argparse_namespace(argv)
    capsys.readouterr()
    if quick is not None:
        assert vars(quick) == theirs


def test_the_count_views_plain_lines_are_parsed_here():
    """The lines the bench and the docs give: a fall back to argparse would cost them."""
    for line in (
        "diff 1 2",
        "diff 1 2 --format json",
        "top 1 -n 40",
        "annotate --all 1 --context 8",
        "annotate _bc_rec_mul 1 --context 8",
        "--store s top --total",
    ):
        assert quick_args.parse(line.split()) is not None, line


def test_a_count_view_imports_no_argparse():
    code = (
        "import sys; from perfsleuth import cli\n"
        "cli.main(['--store', sys.argv[1], 'diff', '1', '2'])\n"
        "print('argparse' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "/nonexistent-store"], capture_output=True, text=True
    )
    assert done.stderr.splitlines()[-1] == "False", done.stderr


TOKENS = [
    "1",
    "2",
    "latest",
    "latest~1",
    "main",
    "--format",
    "json",
    "text",
    "-o",
    "out",
    "-n",
    "5",
    "x",
    "--by",
    "line",
    "--state",
    "running",
    "--thread",
    "3",
    "--no-inline",
    "--split-recursion",
    "--self",
    "--total",
    "--all",
    "--threshold",
    "0.5",
    "--context",
    "8",
    "--src",
    "d",
    "--asm",
    "--store",
    "s",
    "--store=t",
    "--quiet",
    "-",
    "--",
    "-5",
    "--format=json",
    "--form",
]


def test_random_lines_parsed_here_are_parsed_as_argparse_parses_them(capsys):
    """1,000 lines of the count views' options, values and mistakes in random order: every
    one parsed here (about a fifth; the others go to argparse) gives argparse's namespace."""
    import random

    rng = random.Random(29)
    parsed = 0
    for _ in range(1000):
        before = rng.choice([[], [], ["--store", "s"], ["--quiet"]])
        argv = [*before, rng.choice(("top", "diff", "annotate"))]
        argv += [rng.choice(TOKENS) for _ in range(rng.randint(0, 6))]
        quick = quick_args.parse(argv)
        if quick is not None:
            parsed += 1
            assert vars(quick) == argparse_namespace(argv), argv
    capsys.readouterr()
    assert parsed > 100
