"""The output registry: every output found by name, the CLI's choices made from it, and
each output named in docs/output.md."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from perfsleuth.cli import build_parser
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.present import (
    ANY_OUTPUT_KINDS,
    FINDINGS,
    PROFILE,
    UI,
    VIEW_OUTPUTS,
    TitledProfile,
    formats_for,
    output,
    outputs,
    outputs_for,
    write,
)
from perfsleuth.present.text import RENDERERS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "output.md"


def test_every_output_module_is_registered_by_name() -> None:
    names = {"text", "json", "sarif", "markdown", "html", "folded", "pprof", "speedscope"}
    assert names <= set(outputs())


def test_each_output_is_found_in_the_module_of_its_name_alone() -> None:
    for name, found in outputs().items():
        assert import_module(f"perfsleuth.present.{name}").OUTPUT is found
        assert output(name) is found
    script = (
        "import sys; from perfsleuth.present import output; output('json'); "
        "print(' '.join(m for m in sys.modules if m.startswith('perfsleuth.present.')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    loaded = {name.rpartition(".")[2] for name in done.stdout.split()}
    assert "json" in loaded and not loaded & {"pprof", "html", "firefox", "speedscope", "sarif"}


def test_choices_per_document_kind_put_text_first() -> None:
    assert formats_for("top")[:2] == ("text", "json")
    assert formats_for(FINDINGS)[0] == "text"
    assert {"json", "markdown", "sarif"} <= set(formats_for(FINDINGS))
    profile_outputs = formats_for(PROFILE)
    assert list(profile_outputs) == sorted(profile_outputs)
    assert {"folded", "pprof", "speedscope"} <= set(profile_outputs)
    assert "html" not in profile_outputs  # the UI page is one (flame --html, report)
    assert "html" in formats_for(UI)


def test_text_and_json_alone_write_the_views_documents() -> None:
    for found in outputs().values():
        if found.name not in VIEW_OUTPUTS:
            assert set(found.writers) <= set(ANY_OUTPUT_KINDS), found.name
    for kind in RENDERERS:
        assert formats_for(kind)[0] == "text" and "json" in formats_for(kind)


def test_a_views_choices_import_no_other_output() -> None:
    script = (
        "import sys; from perfsleuth.present import formats_for; print(formats_for('diff')); "
        "print(' '.join(m for m in sys.modules if m.startswith('perfsleuth.present.')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    choices, modules = done.stdout.splitlines()
    assert choices == "('text', 'json')"
    loaded = {name.rpartition(".")[2] for name in modules.split()}
    assert not loaded & {"pprof", "html", "firefox", "speedscope", "sarif", "markdown", "folded"}


def test_every_text_renderer_exists() -> None:
    for module, function in RENDERERS.values():
        assert callable(getattr(import_module(f"perfsleuth.present.{module}"), function))


def test_every_output_has_its_line_in_the_docs() -> None:
    rows = [line for line in DOCS.read_text().splitlines() if line.startswith("| `")]
    documented = {row.split("`")[1] for row in rows}
    assert documented == set(outputs())


@pytest.mark.parametrize("fmt", formats_for(PROFILE))
def test_export_has_one_option_per_profile_output(fmt: str, tmp_path: Path) -> None:
    args = build_parser(["export"]).parse_args(["export", "3", f"--{fmt}", "out"])
    chosen = [o.name for o in outputs_for(PROFILE) if getattr(args, f"export_{o.name}")]
    assert chosen == [fmt]


@pytest.mark.parametrize("fmt", formats_for(PROFILE))
def test_every_profile_output_writes_a_file(fmt: str, tmp_path: Path) -> None:
    b = ProfileBuilder(unit="ns")
    b.add([Frame("work"), Frame("main")], 3.0)
    path = tmp_path / f"run.{fmt}"
    write(PROFILE, TitledProfile(b.build(), "run 1: ./prog"), fmt, str(path))
    assert path.stat().st_size > 0
