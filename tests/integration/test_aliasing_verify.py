"""`advise --verify` for aliasing writes: a scratch copy is changed and recompiled;
the user's source is never touched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from perfsleuth.advisor import verify
from perfsleuth.analyzers import Context
from perfsleuth.commands.lint import lint
from perfsleuth.experiments.aliasing import verify_aliasing
from perfsleuth.model.profile import Profile
from perfsleuth.model.run import RunInfo

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def finding_of(source: Path, function: str):  # type: ignore[no-untyped-def]
    findings, _ = lint([source], None)
    return next(f for f in findings if f.kind == "aliasing-write" and f.function == function)


def test_char8_t_makes_the_example_loop_vectorize(tmp_path: Path) -> None:
    source = tmp_path / "expand.cc"
    shutil.copy(ROOT / "examples" / "aliasing" / "expand.cc", source)
    before = digest(source)
    proof = verify_aliasing(finding_of(source, "expand"))
    assert proof is not None
    assert proof["change"] == "write through char8_t"
    assert not proof["vectorized_before"] and proof["vectorized_after"]
    assert proof["reloads_before"] > 0 and proof["reloads_after"] == 0
    assert proof["instructions_per_element_after"] < proof["instructions_per_element_before"]
    assert "clang 16 now vectorizes the loop" in proof["summary"]
    assert proof["method"] == "recompiled a scratch copy with clang-16"
    assert digest(source) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expand.cc"]


def test_hoisting_in_c_is_tried_when_there_is_no_char8_t(tmp_path: Path) -> None:
    source = tmp_path / "prune.c"
    source.write_text(
        "#include <stdint.h>\nstruct T { unsigned n; };\n"
        "void prune(const struct T* t, uint8_t* out, const uint8_t* in) {\n"
        "  for (unsigned i = 0; i < t->n; ++i) out[i] = in[i] + 1;\n"
        "}\n"
    )
    proof = verify_aliasing(finding_of(source, "prune"))
    assert proof is not None
    assert proof["change"] == "hoist `t->n` into locals before the loop"
    assert proof["vectorized_after"]


def test_advise_verify_proves_an_aliasing_finding_without_the_recorded_command(
    tmp_path: Path,
) -> None:
    source = tmp_path / "expand.cc"
    shutil.copy(ROOT / "examples" / "aliasing" / "expand.cc", source)
    finding = finding_of(source, "expand")
    ctx = Context(profile=Profile(), run=RunInfo(command="--pid 42"))
    verify([finding], ctx)
    assert finding.verified is not None
    assert finding.verified["change"] == "write through char8_t"
    assert any("attached to a PID" in note for note in ctx.notes)
