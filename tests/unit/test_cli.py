"""The command line: which command modules a run imports, global options, option checks."""

import json
import subprocess
import sys

import pytest

from perfsleuth.cli import after_global_options, build_parser, main
from perfsleuth.commands import COMMANDS, load, named


def test_cli_imports_only_the_command_it_runs():
    assert named(["top", "-n", "3"]) == "top"
    assert named(["import", "x"]) == "import"
    assert named(["--help"]) is None and named(["nosuch"]) is None


def test_every_command_is_registered_with_its_own_help_line():
    for name, (_module, help_line) in COMMANDS.items():
        module = load(name)
        assert (name, help_line) == (module.NAME, module.HELP)


def test_help_lists_every_command_without_importing_them():
    code = (
        "import sys; from perfsleuth import cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('perfsleuth.commands.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert all(name in done.stdout for name in COMMANDS)
    # the parsers (argparse's and commands/quick_args.py's) are not commands
    done.stdout = done.stdout.replace("'perfsleuth.commands.parser', ", "")
    done.stdout = done.stdout.replace("'perfsleuth.commands.quick_args'", "")
    assert done.stdout.strip().splitlines()[-1] == "[]"


# What a command's run needs and its --help does not: imported by `lint --help`,
# `gate --help` and `agent --help` they cost 0.3-0.44 CPU-s (issue 29: under 0.3), and
# the analyzers ~0.1 of `record`'s, `run`'s and `advise`'s.
HEAVY = (
    "perfsleuth.analyzers",
    "clang.cindex",
    "capstone",
    "duckdb",
    "pyarrow",
    "orjson",
    "google.protobuf",
    "perfsleuth.formats.perf_data",
    "perfsleuth.agent.daemon",
    "perfsleuth.collect.valgrind",
    "perfsleuth.static_analysis.codebase",
)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_commands_help_imports_none_of_what_only_its_run_needs(command):
    code = (
        "import sys; from perfsleuth import cli\n"
        f"try:\n    cli.main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_store_before_the_subcommand_as_after_it(tmp_path, monkeypatch):
    monkeypatch.delenv("PERFSLEUTH_STORE", raising=False)
    store = str(tmp_path / "s")
    for argv in (
        ["--store", store, "runs"],
        [f"--store={store}", "runs"],
        ["runs", "--store", store],
        ["--store", "elsewhere", "runs", "--store", store],
    ):
        args = build_parser(argv).parse_args(argv)
        assert (args.command, args.store) == ("runs", store), argv
    assert named(after_global_options(["--store", store, "top"])) == "top"
    assert build_parser(["runs"]).parse_args(["runs"]).store == ".perfsleuth"


def test_store_before_the_subcommand_runs(tmp_path, capsys):
    assert main(["--store", str(tmp_path / "s"), "runs", "--format", "json"]) == 0
    assert capsys.readouterr().out.strip() == "[]"


@pytest.mark.parametrize("command", ["record", "run"])
@pytest.mark.parametrize(
    "option", [["--freq", "0"], ["--freq", "-5"], ["--pid", "0"], ["--pid", "-1"], ["--freq", "x"]]
)
def test_record_refuses_nonpositive_freq_and_pid(command, option, capsys):
    with pytest.raises(SystemExit) as exited:
        main([command, *option, "--", "true"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option[0]}: {option[1]!r} is not a" in err
    assert "1 or more" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("command", "option", "message"),
    [
        (["record"], ["--sample-calls", "0"], "is not 'auto' or a sampling interval K"),
        (["record"], ["--sample-calls", "every"], "is not 'auto' or a sampling interval K"),
        (["run"], ["--max-calls", "1000000"], "is more than 100,000 (a number of calls)"),
        (["record"], ["--trace-seconds", "0"], "is not a number of seconds"),
        (["record"], ["--trace-seconds", "100000"], "is more than 86,400"),
        (["lint"], ["--min-confidence", "3"], "is not a confidence (a number from 0 to 1)"),
    ],
)
def test_cache_and_lint_options_are_bounded(command, option, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main([*command, *option, *(["--", "true"] if command != ["lint"] else [])])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err.strip().splitlines()[-1] and "Traceback" not in err


def test_top_reads_the_kept_function_topn_and_it_equals_the_view(tmp_path, capsys):
    from perfsleuth.model.profile import Frame, ProfileBuilder
    from perfsleuth.model.run import Recording, RunInfo
    from perfsleuth.store.runs import Store
    from perfsleuth.views import top

    builder = ProfileBuilder(unit="samples")
    for i in range(30):
        builder.add([Frame(f"leaf{i}", "prog"), Frame("main", "prog")], 1 + i % 7)
    store = Store(tmp_path / "s")
    store.add_run(RunInfo(command="prog"), Recording(builder.build()))
    assert not (tmp_path / "s" / "answers").exists()
    for _ in range(2):  # the first computes and keeps it, the second reads the file
        assert main(["--store", str(tmp_path / "s"), "top", "-n", "5", "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc == {"run": "1", **top.top(store.load(1), n=5)}
        assert len(list((tmp_path / "s" / "answers").glob("run1-top-function-*"))) == 1


def test_a_commands_parser_imports_no_shutil_and_its_help_is_argparses():
    """argparse makes a help formatter at every add_argument and imported shutil (with
    lzma and bz2) for its width: 0.006-0.012 CPU-s of every command. The help is laid out
    at the same width as argparse's own formatter gives, $COLUMNS or 80 off a terminal."""
    code = (
        "import sys; from perfsleuth import cli\n"
        "cli.build_parser(['diff', '1', '2']).parse_args(['diff', '1', '2'])\n"
        "print('shutil' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    for columns in ("", "57", "123"):
        env = {"COLUMNS": columns} if columns else {}
        ours = subprocess.run(
            [sys.executable, "-m", "perfsleuth.cli", "diff", "--help"],
            capture_output=True, text=True, check=True, env={**_env(), **env},
        ).stdout  # fmt: skip
        code = (
            "import argparse, sys\nfrom perfsleuth import cli\n"
            "p = cli.build_parser(['diff'])\n"
            "s = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))\n"
            "d = s.choices['diff']; d.formatter_class = argparse.HelpFormatter\n"
            "print(d.format_help(), end='')"
        )
        theirs = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**_env(), **env},
        ).stdout  # fmt: skip
        assert ours == theirs, columns


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def test_ctrl_c_says_interrupted(tmp_path, monkeypatch, capsys):
    """Python's own KeyboardInterrupt has no message, and an exception is always true:
    `{e or 'interrupted'}` printed "perfsleuth: " alone (Ctrl-C while offcpu or all mode
    started bpftrace for sqlwriters)."""

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(load("runs"), "run", interrupted)
    assert main(["runs", "--store", str(tmp_path)]) == 130
    assert capsys.readouterr().err == "perfsleuth: interrupted\n"
