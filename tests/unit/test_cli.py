"""The command line: which command modules a run imports."""

from perfsleuth.commands import load_for


def test_cli_imports_only_the_command_it_runs():
    assert [m.NAME for m in load_for(["top", "-n", "3"])] == ["top"]
    assert [m.NAME for m in load_for(["import", "x"])] == ["import"]
    assert len(load_for(["--help"])) == len(load_for(["nosuch"])) > 10
