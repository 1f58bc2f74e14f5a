"""compare / try allocator / try build on real programs (no timing assertions here)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from perfsleuth.analyzers import AnalyzerOptions, Context
from perfsleuth.cli import main
from perfsleuth.experiments.verify import Trial, verify_finding
from perfsleuth.model.findings import Finding
from perfsleuth.model.profile import Profile
from perfsleuth.model.run import RunInfo
from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BUILDME = ROOT / "examples" / "experiments" / "buildme"


def perfsleuth_json(args: list[str], store: Path, out: Path) -> tuple[int, dict[str, Any]]:
    """Runs `perfsleuth COMMAND [EXPERIMENT] --store S --format json -o OUT ARGS...`."""
    at = 2 if args[0] == "try" else 1
    options = ["--store", str(store), "--format", "json", "-o", str(out)]
    status = main([*args[:at], *options, *args[at:]])
    return status, json.loads(out.read_text()) if status in (0, 1) else {}


def stored_experiment(store: Path, name: str) -> dict[str, Any]:
    return Store(store).documents(0, "experiment")[name]


def test_compare_on_identical_commands_says_same(tmp_path: Path) -> None:
    verdicts = []
    for trial in range(20):
        status, doc = perfsleuth_json(
            ["compare", "--runs", "10", "--", "true", "--vs", "true"],
            tmp_path / "store",
            tmp_path / f"compare{trial}.json",
        )
        assert status == 0
        verdicts.append(doc["verdict"])
    assert verdicts.count("same") >= 19, verdicts
    assert doc["runs"] == 10 and len(doc["ci95"]) == 2
    assert set(doc["a"]) >= {"wall_s", "user_s", "sys_s", "max_rss_kb", "command"}
    raw = stored_experiment(tmp_path / "store", doc["experiment"])["raw"]
    assert len(raw["A"]["runs"]) == 10 and len(raw["B"]["warmup"]) == 1


def test_compare_reports_a_failing_run_and_leaves_it_out(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    # Fails on its 5th start only: warm-up is the 1st, so measured run 4 fails.
    flaky = (
        f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
        '[ "$n" -ne 4 ] || { echo "flaky: out of luck" >&2; exit 3; }'
    )
    status, doc = perfsleuth_json(
        ["compare", "--runs", "10", "--", flaky, "--vs", "true"],
        tmp_path / "store",
        tmp_path / "out.json",
    )
    assert status == 0
    assert doc["runs"] == 9 and doc["a"]["runs"] == 9 and doc["a"]["failed"] == 1
    [failure] = doc["failed"]
    assert (failure["side"], failure["phase"], failure["run"]) == ("A", "run", 4)
    assert failure["exit_status"] == 3 and failure["stderr_tail"] == ["flaky: out of luck"]


def test_compare_counts_instructions_exactly(tmp_path: Path, examples_built: Path) -> None:
    vm = str(examples_built / "vm")
    status, doc = perfsleuth_json(
        ["compare", "--runs", "9", "--metric", "instructions", "--", vm, "2", "--vs", vm, "4"],
        tmp_path / "store",
        tmp_path / "out.json",
    )
    assert status == 0
    counts = doc["a"]["instructions"]
    assert counts["min"] == counts["max"] > 0  # exact counts do not vary between runs
    assert doc["verdict"] == "slower" and 0.4 < doc["ratio"] < 0.7


def test_compare_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--store", str(tmp_path), "--", "true", "true"]) == 2
    assert main(["compare", "--store", str(tmp_path), "--", "no-such-program", "--vs", "true"]) == 2
    err = capsys.readouterr().err
    assert "--vs" in err and "command not found or not executable: no-such-program" in err
    assert not (tmp_path / "runs.duckdb").exists()


def test_try_allocator_checks_the_preload_and_stores_the_runs(
    tmp_path: Path, examples_built: Path
) -> None:
    status, doc = perfsleuth_json(
        ["try", "allocator", "--runs", "4", "--allocators", "mimalloc,jemalloc", "--",
         str(examples_built / "alloc_heavy"), "3"],
        tmp_path / "store",
        tmp_path / "out.json",
    )  # fmt: skip
    assert status == 0
    assert [v["name"] for v in doc["variants"]] == ["mimalloc", "jemalloc"]
    assert "libmimalloc.so.2" in doc["preload_checks"]["mimalloc"]
    assert "alloc_heavy, libc.so.6" in doc["preload_checks"]["mimalloc"]
    for variant in doc["variants"]:
        assert variant["ratio"] > 0 and variant["verdict"] in ("faster", "slower", "same")
        assert variant["summary"]["runs"] == 4
    raw = stored_experiment(tmp_path / "store", doc["experiment"])["raw"]
    assert raw["jemalloc"]["env"]["LD_PRELOAD"].endswith("libjemalloc.so.2")
    assert len(raw["baseline"]["runs"]) == 4


@pytest.mark.parametrize(
    ("program", "reason"),
    [
        ("alloc_heavy-static", "is statically linked"),
        ("own_malloc", "defines malloc itself"),
    ],
)
def test_try_allocator_refuses_what_a_preload_cannot_change(
    tmp_path: Path,
    examples_built: Path,
    capsys: pytest.CaptureFixture[str],
    program: str,
    reason: str,
) -> None:
    argv = ["try", "allocator", "--store", str(tmp_path), "--", str(examples_built / program)]
    assert main(argv) == 2
    assert reason in capsys.readouterr().err


def test_try_allocator_refuses_a_program_with_a_bundled_allocator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bundled.c"
    source.write_text(
        "#include <stdlib.h>\n"
        "void *je_malloc(size_t n) { return calloc(1, n); }\n"
        "int main(void) { return je_malloc(8) == 0; }\n"
    )
    program = tmp_path / "bundled"
    subprocess.run(["gcc", "-O1", "-o", str(program), str(source)], check=True)
    assert main(["try", "allocator", "--store", str(tmp_path), "--", str(program)]) == 2
    assert "defines je_malloc itself" in capsys.readouterr().err


def test_try_allocator_refuses_a_setuid_program(
    tmp_path: Path, examples_built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    setuid = tmp_path / "alloc_heavy"
    shutil.copy(examples_built / "alloc_heavy", setuid)
    setuid.chmod(0o4755)
    assert main(["try", "allocator", "--store", str(tmp_path), "--", str(setuid)]) == 2
    assert "is setuid/setgid: the dynamic loader ignores LD_PRELOAD" in capsys.readouterr().err


def test_try_allocator_sees_through_a_wrapper_that_keeps_its_own_malloc(
    tmp_path: Path, examples_built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrapped = f"exec {examples_built / 'own_malloc'}"
    assert main(["try", "allocator", "--store", str(tmp_path), "--", wrapped]) == 2
    err = capsys.readouterr().err
    assert "still resolves to" in err and "bin/own_malloc, not the preloaded" in err


def producer(binary: Path) -> str:
    info = subprocess.run(
        ["readelf", "--debug-dump=info", str(binary)], capture_output=True, text=True, check=True
    ).stdout
    return next(line for line in info.splitlines() if "DW_AT_producer" in line)


def test_try_build_rebuilds_each_variant_with_its_flags(tmp_path: Path) -> None:
    store = tmp_path / "store"
    status, doc = perfsleuth_json(
        ["try", "build", "--build", f"make -s -C {BUILDME}", "--variants", "O0,O2,pgo,pgo-lto",
         "--runs", "3", "--", "{out}/vm", "100"],
        store,
        tmp_path / "out.json",
    )  # fmt: skip
    assert status == 0
    assert [v["name"] for v in doc["variants"]] == ["O0", "O2", "pgo", "pgo-lto"]
    assert all(v["ratio"] > 0 and len(v["ci95"]) == 2 for v in doc["variants"])
    builds = store / "builds"
    assert " -O0 " in producer(builds / "O0" / "vm")
    assert "-fprofile-use" in producer(builds / "pgo" / "vm")
    assert list((builds / "pgo-profile").rglob("*.gcda"))
    both = producer(builds / "pgo-lto" / "vm")  # LTO's own producer, with the profile's flag
    assert "): GNU GIMPLE " in both and "-fprofile-use" in both
    assert list((builds / "pgo-lto-profile").rglob("*.gcda"))
    # The example's own default is -O2 -g, so the O2 variant is the baseline, bit for bit.
    assert any(note.startswith("O2 built byte-identical") for note in doc["notes"])


def test_try_build_shows_which_variant_failed_and_its_last_lines(tmp_path: Path) -> None:
    only_o3_fails = (
        'case "$CFLAGS" in *-O3*) echo "cc1: error: this build breaks at -O3" >&2; exit 1;; esac; '
        f"make -s -C {BUILDME}"
    )
    status, doc = perfsleuth_json(
        ["try", "build", "--build", only_o3_fails, "--variants", "O3,O2", "--runs", "3",
         "--", "{out}/vm", "50"],
        tmp_path / "store",
        tmp_path / "out.json",
    )  # fmt: skip
    assert status == 1
    failed = {v["name"]: v for v in doc["variants"]}["O3"]
    assert failed["verdict"] == "failed" and failed["ratio"] is None
    assert "variant O3 failed" in failed["error"] and "breaks at -O3" in failed["error"]


def test_try_build_with_a_broken_build_command_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = "echo compiling; echo 'error: no rule to make vm' >&2; exit 2"
    argv = ["try", "build", "--store", str(tmp_path), "--build", broken, "--", "{out}/vm"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "variant baseline failed with exit status 2" in err
    assert "error: no rule to make vm" in err and "compiling" in err
    assert not (tmp_path / "runs.duckdb").exists()


def finding(kind: str, fix: dict[str, str]) -> Finding:
    return Finding(
        rule=f"{kind}.test",
        kind=kind,
        title="t",
        share=0.3,
        estimated_gain=0.1,
        confidence=0.5,
        suggestion="s",
        fix=fix,
    )


def verify_trial(store: Path, cwd: Path, command: list[str], **options: Any) -> Trial:
    ctx = Context(
        profile=Profile(),
        run=RunInfo(id=5, cwd=str(cwd)),
        options=AnalyzerOptions(verify_runs=3, **options),
    )
    return Trial(ctx, command, Store(store))


def test_verify_fills_an_allocator_finding_from_its_fix(
    tmp_path: Path, examples_built: Path
) -> None:
    fix = {"command": "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 bin/alloc_heavy 2"}
    trial = verify_trial(tmp_path / "store", examples_built.parent, ["bin/alloc_heavy", "2"])
    verified = verify_finding(finding("allocator", fix), trial)
    assert verified is not None and verified["variant"] == "jemalloc"
    assert verified["ratio"] > 0 and verified["runs"] == 3 and len(verified["ci95"]) == 2
    assert verified["summary"].startswith("jemalloc") and "3 pairs" in verified["summary"]
    stored = Store(tmp_path / "store").documents(5, "experiment")[verified["experiment"]]
    assert stored["finding"] == "allocator.test" and len(stored["raw"]["baseline"]["runs"]) == 3


def test_verify_rebuilds_a_build_flags_finding_when_given_the_build(
    tmp_path: Path, examples_built: Path
) -> None:
    command = [str(examples_built / "vm"), "50"]
    without = verify_trial(tmp_path / "store", ROOT, command)
    assert verify_finding(finding("build-flags", {"flags": "-O1"}), without) is None
    assert "rebuilding needs the build command" in without.ctx.notes[0]
    trial = verify_trial(tmp_path / "store", ROOT, command, build=f"make -s -C {BUILDME}")
    verified = verify_finding(finding("build-flags", {"flags": "-O1"}), trial)
    assert verified is not None and verified["variant"] == "flags"
    assert " -O1 " in producer(tmp_path / "store" / "builds" / "flags" / "vm")
