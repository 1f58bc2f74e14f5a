"""advise --verify runs again only the user's own recorded command, never a label."""

from __future__ import annotations

from perfsleuth import advisor
from perfsleuth.analyzers import Context
from perfsleuth.collect.run_facts import ATTACHED, new_run
from perfsleuth.model.profile import ProfileBuilder


def context(command: str, source: str) -> Context:
    run = new_run(command, "python", source=source)
    return Context(profile=ProfileBuilder().build(), run=run)


def test_an_attached_run_is_never_run_again() -> None:
    ctx = context("python3 app.py (pid 4242)", ATTACHED)
    assert advisor._recorded_command(ctx) == []
    assert any("attached to a PID or was imported" in note for note in ctx.notes)


def test_an_attached_run_stored_before_run_sources_is_never_run_again() -> None:
    for label in ("python3 app.py (pid 4242)", "--pid 4242"):
        assert advisor._recorded_command(context(label, "record")) == []


def test_an_imported_run_is_never_run_again() -> None:
    ctx = context("import py-spy.txt", "import:py_spy")
    assert advisor._recorded_command(ctx) == []


def test_the_users_own_command_is_run_again() -> None:
    ctx = context("python3 app.py --fast", "record")
    assert advisor._recorded_command(ctx) == ["python3", "app.py", "--fast"]
    assert not ctx.notes
