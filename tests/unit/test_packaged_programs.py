"""A code change in a packaged program's own code is said to be the package's: GNU od's
time in glibc's printf, called from od's own stripped code, was "format numbers without
a format string" at confidence 0.75, a change only od's authors can make."""

from __future__ import annotations

from perfsleuth.analyzers import Context, cost_classes, library_match
from perfsleuth.analyzers.packaged_programs import packaged_run
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import RunInfo

SNPRINTF = Frame("__snprintf_chk", "libc.so.6")
VFPRINTF = Frame("__vfprintf_internal", "libc.so.6")
STRCMP = Frame("__strcmp_evex", "libc.so.6")
BINARIES = [{"path": "/usr/bin/od"}, {"path": "/usr/bin/bash"}, {"path": "/home/me/dump"}]


def context(program: str, work: Frame, shell: float = 0.0, user_site: Frame | None = None):
    """PROGRAM spends 60 in WORK (called from its own nameless code, or from user_site)
    and 40 elsewhere; a bash that started it holds SHELL."""
    builder = ProfileBuilder()
    thread = Thread(tid=7, pid=7, name=program)
    caller = user_site or Frame(f"[unknown] {program}+0x41b0", program)
    builder.add([work, caller], 60, thread=thread)
    builder.add([Frame(f"[unknown] {program}+0x2210", program)], 40, thread=thread)
    if shell:
        builder.add([Frame("[unknown] bash+0x99", "bash")], shell, thread=Thread(6, 6, "bash"))
    run = RunInfo(command=f"{program} -An -tx1 big")
    return Context(builder.build(), run, binaries=BINARIES)


def test_the_packaged_programs_holding_the_time_are_named() -> None:
    assert packaged_run(context("od", SNPRINTF, shell=2)) == ["od"]
    assert packaged_run(context("od", SNPRINTF, shell=30)) == ["od", "bash"]
    assert packaged_run(context("dump", SNPRINTF)) == []  # the user's own program


def test_a_library_rules_code_change_in_a_packaged_program_says_whose_code_it_is() -> None:
    (printf,) = [
        f
        for f in library_match.analyze(context("od", VFPRINTF, shell=2))
        if f.rule == "formatting.printf"
    ]
    assert printf.details["packaged_program"] == ["od"]
    assert printf.suggestion.startswith("This is od's own code (a packaged program)")
    assert any("the code change below is the package's" in e for e in printf.evidence)
    ours = library_match.analyze(context("dump", VFPRINTF))
    assert ours and all("packaged_program" not in f.details for f in ours)


def test_a_call_from_the_users_code_in_a_packaged_program_keeps_its_advice() -> None:
    """A call site with source (a plugin's, a script's) is the user's to change."""
    site = Frame("render_row", "libplugin.so", "/home/me/plugin/render.c", 12)
    found = library_match.analyze(context("od", VFPRINTF, user_site=site))
    assert found and all("packaged_program" not in f.details for f in found)


def test_a_cost_class_in_a_packaged_program_says_whose_code_it_is() -> None:
    """GNU sort: "64% in string comparisons: compare less", confidence 0.40."""
    (compare,) = [
        f for f in cost_classes.analyze(context("od", STRCMP)) if f.rule == "class.mem.compare"
    ]
    assert compare.details["packaged_program"] == ["od"]
    assert "own code (a packaged program)" in compare.suggestion
