"""Build variants, the workload contract, and how a finding's fix becomes an experiment."""

from __future__ import annotations

import pytest

from perfsleuth.errors import UserError
from perfsleuth.experiments import build, verify
from perfsleuth.model.findings import Finding


def build_finding(**fix: str) -> Finding:
    return Finding(
        rule="build.options-hint",
        kind="build-flags",
        title="t",
        share=0.5,
        estimated_gain=0.05,
        confidence=0.3,
        suggestion="s",
        fix=dict(fix),
    )


def test_default_and_chosen_variants() -> None:
    assert [v.name for v in build.parse_variants(None)] == list(build.DEFAULT_VARIANTS)
    chosen = build.parse_variants("O0, lto")
    assert [(v.name, v.cflags, v.ldflags) for v in chosen] == [
        ("O0", "-O0", ""),
        ("lto", "-O2 -flto", "-flto"),
    ]
    assert build.VARIANTS["pgo"].pgo


def test_unknown_variant_is_named() -> None:
    with pytest.raises(UserError, match="unknown build variant 'O9'"):
        build.parse_variants("O2,O9")


def test_workload_must_run_the_rebuilt_program() -> None:
    with pytest.raises(UserError, match="use {out}"):
        build.check_workload(["./prog", "input"])
    build.check_workload(["{out}/prog", "input"])
    build.check_workload(["/bin/sh", "-c", "$OUT/prog input"])


def test_workload_side_points_at_the_variant_folder(tmp_path) -> None:
    side = build.workload_side("O3", ["{out}/prog", "--in", "data"], tmp_path, "/src")
    assert side.argv == [f"{tmp_path}/prog", "--in", "data"]
    assert side.env == {"OUT": str(tmp_path)} and side.cwd == "/src"


def test_variant_flags_come_after_the_callers_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CFLAGS", "-Iinclude -DNDEBUG")
    monkeypatch.delenv("LDFLAGS", raising=False)
    env = build.flags_env("-O3 -g", "-flto")
    assert env["CFLAGS"] == "-Iinclude -DNDEBUG -O3 -g"
    assert env["LDFLAGS"] == "-flto"


def test_advised_flags_become_a_build_variant() -> None:
    hint = verify._variant_of(build_finding(flags="-march=native -flto -fprofile-use"))
    assert (hint.cflags, hint.ldflags, hint.pgo) == ("-O2 -march=native -flto", "-flto", True)
    unoptimized = verify._variant_of(build_finding(flags="-O2 -g"))
    assert (unoptimized.cflags, unoptimized.pgo) == ("-O2 -g", False)
    assert verify._variant_of(build_finding(variant="lto")) is build.VARIANTS["lto"]


def test_finding_without_flags_cannot_be_rebuilt() -> None:
    with pytest.raises(UserError, match="no compiler flags"):
        verify._variant_of(build_finding())


def test_the_allocator_a_fix_names() -> None:
    fix = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ./prog"
    assert verify.named_allocator(fix) == "jemalloc"
    assert verify.named_allocator("LD_PRELOAD=<library> ./prog") is None


def test_a_dependency_build_is_found_by_its_soname_or_a_version_of_it(tmp_path) -> None:
    (tmp_path / "lib" / "x").mkdir(parents=True)
    (tmp_path / "lib" / "x" / "libz3.so.4.8").write_bytes(b"")
    assert build.library_folder(tmp_path, "libz3.so.4") == tmp_path / "lib" / "x"
    (tmp_path / "libz3.so.4").write_bytes(b"")
    assert build.library_folder(tmp_path, "libz3.so.4") == tmp_path
    with pytest.raises(UserError, match=r"wrote no libfoo.so.1 \(nor libfoo.so\*\)"):
        build.library_folder(tmp_path, "libfoo.so.1")


def test_a_dependency_side_puts_its_build_first_on_the_library_path(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/lib")
    (tmp_path / "libsolver.so").write_bytes(b"")
    builder = build.Builder("true", tmp_path, dependency="libsolver.so")
    side = builder.side("lto", ["./prog", "{out}"], tmp_path)
    assert side.env["LD_LIBRARY_PATH"] == f"{tmp_path}:/opt/lib"
    assert side.argv == ["./prog", str(tmp_path)]
