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


def test_a_count_runs_finding_speaks_of_instructions_in_its_basis_too() -> None:
    """brotli's count run: the build-flags hint's basis said "5.9% of CPU time is in the
    own code of functions called from other compile units"."""
    from perfsleuth.model.findings import Finding

    finding = Finding(
        rule="build.options-hint",
        kind="build-flags",
        title="brotli is built without -flto",
        share=0.986,
        estimated_gain=0.11,
        confidence=0.45,
        suggestion="Worth a try",
        evidence=["hot calls between compile units, not inlined: a (a.c) -> b (b.c) 3.0%"],
        gain_basis="5.9% of CPU time is in the own code of functions called from other units",
    )
    advisor.in_instructions(finding)
    assert finding.gain_basis.startswith("5.9% of the instructions are in the own code")


def test_the_analyzers_that_compile_hot_units_run_last() -> None:
    """They stop at the analysis's CPU budget, counted from its start: after the others,
    the whole analysis keeps to it (run first, speedtest1's advise took 16 CPU-s of 10)."""
    from perfsleuth.analyzers import discover

    names = list(discover())
    deep = ["aliasing_write", "missed_vectorization"]
    assert names[-2:] == deep
    assert names[:-2] == sorted(names[:-2]) and "build_flags" in names


def test_a_sampled_runs_findings_carry_their_samples_and_a_short_run_a_note() -> None:
    from perfsleuth.model.findings import Finding
    from perfsleuth.model.profile import Frame
    from perfsleuth.rank import SUPPORT

    builder = ProfileBuilder()
    builder.add([Frame("main", "prog")], 40.0, count=40)
    ctx = Context(profile=builder.build(), run=new_run("./prog", "cpu"))
    found = [Finding("r", "cost-class", "t", 0.25, 0.1, 0.5, "s")]
    advisor.weigh_support(found, ctx)
    assert found[0].details[SUPPORT] == 10
    assert any("only 40 sample(s)" in note for note in ctx.notes)


def test_only_sampled_modes_count_support() -> None:
    run = new_run("./prog", "offcpu")
    assert not advisor.is_sampled(Context(profile=ProfileBuilder(unit="ns").build(), run=run))
    run = new_run("./prog", "wall")
    assert advisor.is_sampled(Context(profile=ProfileBuilder(unit="ns").build(), run=run))
