"""The K2 case study's patterns on small real programs (examples/k2, examples/advisor):
a stripped shared library holding most of the time, a vector<bool> copy loop, and the
patch that fixes it, measured with `try patch`. No timing assertions: orders and texts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perfsleuth.cli import main
from perfsleuth.experiments import build
from perfsleuth.experiments.runner import Side, adopting_orphans, run_once
from perfsleuth.present import write
from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BITS = ROOT / "examples" / "k2" / "bits"


def advised(store: Path, *cmd: str) -> list[dict[str, Any]]:
    """The findings of `perfsleuth run`."""
    out = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "run", "--store", str(store),
         "--format", "json", "--", *cmd],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout[out.stdout.index("{") :])["findings"]


def test_a_stripped_hot_library_is_named_sized_and_ranked_above_the_missing_names(
    examples_built: Path, tmp_path: Path
) -> None:
    findings = advised(tmp_path / "store", str(examples_built / "hotlib"), "4000")
    kinds = [f["kind"] for f in findings]
    hot = findings[kinds.index("hot-library")]
    assert hot["dso"] == "libsolver.so" and hot["share"] >= 0.3
    assert hot["title"].startswith(f"{100 * hot['share']:.1f}% of CPU time is in libsolver.so")
    assert "no symbols" in hot["title"] and "stripped" in hot["suggestion"]
    assert "PGO+LTO" in hot["suggestion"] and "try build --dependency" in hot["suggestion"]
    assert any(line.startswith("entered through solver_check") for line in hot["evidence"])
    assert kinds[0] != "missing-symbols"
    if "missing-symbols" in kinds:
        assert kinds.index("missing-symbols") > kinds.index("hot-library")


def test_recording_a_stripped_hot_library_warns_of_no_missing_names(
    examples_built: Path, tmp_path: Path
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", "record", "--store", str(tmp_path / "s"),
         "--", str(examples_built / "hotlib"), "2000"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "stored run 1" in out.stderr and "no function name" not in out.stderr


def test_the_vector_bool_fix_is_char8_t_never_uint8_t(examples_built: Path, tmp_path: Path) -> None:
    findings = advised(tmp_path / "store", str(examples_built / "vector_bool"))
    rules = [f["rule"] for f in findings]
    assert "container.vector-bool" in rules, rules
    fix = findings[rules.index("container.vector-bool")]["suggestion"]
    assert "std::vector<char8_t>" in fix
    assert "or uint8_t" not in fix and "not uint8_t" in fix


def try_patch(tmp_path: Path, patch: Path, build: str = "make -s") -> tuple[int, dict[str, Any]]:
    out = tmp_path / "out.json"
    status = main(
        ["try", "patch", "--store", str(tmp_path / "store"), "--format", "json", "-o", str(out),
         "--runs", "9", "--source", str(BITS), "--build", build, str(patch), "--", "{out}/inout"]
    )  # fmt: skip
    return status, json.loads(out.read_text()) if status == 0 else {}


def test_try_patch_builds_both_copies_and_compares_them(tmp_path: Path) -> None:
    status, doc = try_patch(tmp_path, BITS / "char8.diff")
    assert status == 0
    (patched,) = doc["variants"]
    assert patched["name"] == "patched" and patched["ratio"] > 1.0
    assert doc["metric"] in ("time", "cpu")
    if doc["metric"] == "cpu":  # chosen for a busy machine: said so
        assert any("the machine is busy" in note for note in doc["notes"])
    trees = tmp_path / "store" / "builds" / "patch-trees"
    assert "char8_t" in (trees / "patched" / "inout.cc").read_text()
    assert "char8_t> reg" not in (trees / "baseline" / "inout.cc").read_text()
    assert "char8_t> reg" not in (BITS / "inout.cc").read_text()  # the user's tree untouched


def test_a_patch_that_does_not_apply_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "stale.diff"
    stale.write_text(
        (BITS / "char8.diff").read_text().replace("std::vector<bool> reg", "std::vector<int> reg")
    )
    assert try_patch(tmp_path, stale)[0] == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"perfsleuth: stale.diff does not apply to {BITS}: error:")
    assert len(err.splitlines()) == 1


def test_a_patched_build_that_fails_shows_its_last_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.diff"
    broken.write_text((BITS / "char8.diff").read_text().replace("char8_t>(REGS)", "char8_t>(REGS"))
    assert try_patch(tmp_path, broken)[0] == 2
    err = capsys.readouterr().err
    assert "the build of variant patched failed" in err and "error:" in err


def test_try_patch_without_git_or_patch_file_says_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert try_patch(tmp_path, tmp_path / "missing.diff")[0] == 2
    assert "no patch file at" in capsys.readouterr().err
    assert shutil.which("git")  # what try patch applies with


SOLVER_BUILD = f"cc $CFLAGS -shared -fPIC -o $OUT/libsolver.so {ROOT}/examples/k2/solver.c $LDFLAGS"


def try_build_solver(
    tmp_path: Path, build_command: str, variants: str, examples_built: Path, rounds: str
) -> tuple[int, dict]:
    """`try build --dependency libsolver.so` of hotlib: its exit status and JSON document."""
    out = tmp_path / "out.json"
    status = main(
        ["try", "build", "--store", str(tmp_path / "store"), "--format", "json", "-o", str(out),
         "--dependency", "libsolver.so", "--build", build_command, "--variants", variants,
         "--runs", "3", "--", str(examples_built / "hotlib"), rounds]
    )  # fmt: skip
    return status, json.loads(out.read_text())


def test_try_build_of_a_dependency_runs_the_program_with_each_build_of_the_library(
    examples_built: Path, tmp_path: Path
) -> None:
    status, doc = try_build_solver(tmp_path, SOLVER_BUILD, "O1,lto", examples_built, "500")
    assert status == 0
    assert doc["dependency"] == "libsolver.so"
    assert [v["name"] for v in doc["variants"]] == ["O1", "lto"]
    assert all(v["ratio"] > 0 for v in doc["variants"])
    assert not [n for n in doc["notes"] if "could not ask the loader" in n]  # it was asked
    raw = Store(tmp_path / "store").documents(0, "experiment")[doc["experiment"]]["raw"]
    assert "LD_LIBRARY_PATH" not in raw["baseline"]["env"]  # the installed library
    builds = (tmp_path / "store" / "builds").resolve()
    assert raw["lto"]["env"]["LD_LIBRARY_PATH"].startswith(str(builds / "lto"))


def test_the_loader_is_asked_which_copy_of_the_library_the_program_loads(
    examples_built: Path, tmp_path: Path
) -> None:
    program = [str(examples_built / "hotlib")]
    installed = build.loaded_from(Side("baseline", program), "libsolver.so")
    assert installed == str(examples_built / "libsolver.so")
    (tmp_path / "lib").mkdir()
    shutil.copy(examples_built / "libsolver.so", tmp_path / "lib")
    side = Side("copy", program, {"LD_LIBRARY_PATH": str(tmp_path / "lib")})
    assert build.loaded_from(side, "libsolver.so") == str(tmp_path / "lib" / "libsolver.so")


def test_a_dependency_build_that_makes_no_library_is_refused_with_why(
    examples_built: Path, tmp_path: Path
) -> None:
    status, doc = try_build_solver(
        tmp_path, "echo built nothing > $OUT/log", "O2", examples_built, "100"
    )
    assert status == 1
    (o2,) = doc["variants"]
    assert o2["verdict"] == "failed" and "wrote no libsolver.so" in o2["error"]


# Forks a helper; the parent kills it once it has started and exits without waiting.
KILLS_ITS_HELPER = (
    "import os, time\n"
    "r, w = os.pipe()\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.write(w, b'x'); time.sleep(100)\n"
    "os.read(r, 1); os.kill(pid, 9); time.sleep(0.2); os._exit(0)\n"
)


def test_cpu_time_counts_helpers_a_program_killed_without_waiting() -> None:
    """K2 kills its Z3 server processes and never waits for them: perfsleuth adopts and
    reaps them, so their CPU time is the run's (else --metric cpu would miss it; a shell
    parent would reap them itself, so the parent here is Python)."""
    with adopting_orphans():
        left = run_once(Side("killed", [sys.executable, "-c", KILLS_ITS_HELPER]), "cpu")
    assert left.ok
    # the killed helper was adopted and reaped in this run, so its rusage is the run's
    assert left.adopted == 1
    assert left.to_json()["adopted"] == 1


def try_combined(tmp_path: Path, *fixes: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "out.json"
    status = main(
        ["try", "combined", "--store", str(tmp_path / "store"), "--format", "json", "-o",
         str(out), "--runs", "5", "--source", str(BITS), "--build", "make -s", *fixes,
         "--", "{out}/inout"]
    )  # fmt: skip
    return status, json.loads(out.read_text()) if status == 0 else {}


def test_try_combined_measures_the_fixes_cumulatively_and_each_step_over_the_last(
    tmp_path: Path,
) -> None:
    status, doc = try_combined(
        tmp_path, "--allocator", "mimalloc", "--patch", str(BITS / "char8.diff"),
        "--variant", "O3",
    )  # fmt: skip
    assert status == 0
    names = ["mimalloc", "mimalloc+patched", "mimalloc+patched+O3"]
    assert [v["name"] for v in doc["variants"]] == names
    assert [(s["name"], s["over"]) for s in doc["steps"]] == list(
        zip(names, ["baseline", *names[:-1]], strict=True)
    )
    # the patch is a 3x change on this loop: every side that has it beats the baseline
    assert all(v["ratio"] > 1.0 for v in doc["variants"][1:])
    assert doc["steps"][1]["ratio"] > 1.0
    assert any(note.startswith("malloc of") and "libmimalloc" in note for note in doc["notes"])
    raw = Store(tmp_path / "store").documents(0, "experiment")[doc["experiment"]]["raw"]
    assert "LD_PRELOAD" not in raw["baseline"]["env"]
    assert all("libmimalloc" in raw[name]["env"]["LD_PRELOAD"] for name in names)
    builds = (tmp_path / "store" / "builds").resolve()
    assert raw[names[-1]]["command"] == [str(builds / "O3" / "inout")]
    producers = subprocess.run(
        ["readelf", "--debug-dump=info", str(builds / "O3" / "inout")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "-O3" in producers  # DW_AT_producer: the last step was built with its flags
    assert "patch-trees/patched" in producers  # ... from the patched copy (DW_AT_comp_dir)
    write("try", doc, "text", str(tmp_path / "out.txt"))
    text = (tmp_path / "out.txt").read_text()
    # each step is said against the step before it, whatever its verdict
    assert re.search(r"^step: mimalloc\+patched\b.* (than|from) mimalloc\b", text, re.M)


def test_try_combined_with_nothing_to_combine_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert try_combined(tmp_path)[0] == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "perfsleuth: nothing to combine: give at least one of --allocator, --patch, --variant, "
        "--dependency"
    )


def test_try_combined_ends_with_the_library_rebuilt_under_the_program_of_the_step_before(
    examples_built: Path, tmp_path: Path
) -> None:
    """The post's last step (Z3's PGO+LTO under K2's): hotlib built from its source, then
    its libsolver.so rebuilt with PGO, trained and run under the mimalloc step's program."""
    hotlib = (
        f"cc -O2 -g $CFLAGS -o $OUT/hotlib {ROOT}/examples/k2/hotlib.c -L{examples_built} "
        f"-lsolver -Wl,-rpath,{examples_built} $LDFLAGS"
    )
    out = tmp_path / "out.json"
    status = main(
        ["try", "combined", "--store", str(tmp_path / "store"), "--format", "json", "-o",
         str(out), "--runs", "3", "--build", hotlib, "--allocator", "mimalloc",
         "--dependency", "libsolver.so", "--dependency-build", SOLVER_BUILD,
         "--dependency-variant", "pgo", "--", "{out}/hotlib", "500"]
    )  # fmt: skip
    assert status == 0
    doc = json.loads(out.read_text())
    names = ["mimalloc", "mimalloc+libsolver-pgo"]
    assert [v["name"] for v in doc["variants"]] == names
    assert [s["over"] for s in doc["steps"]] == ["baseline", "mimalloc"]
    assert doc["dependency"] == "libsolver.so"
    assert not [n for n in doc["notes"] if "could not ask the loader" in n]  # it was asked
    raw = Store(tmp_path / "store").documents(0, "experiment")[doc["experiment"]]["raw"]
    builds = (tmp_path / "store" / "builds").resolve()
    last = raw[names[-1]]
    assert last["command"] == [str(builds / "baseline" / "hotlib"), "500"]
    assert "libmimalloc" in last["env"]["LD_PRELOAD"]
    assert last["env"]["LD_LIBRARY_PATH"].startswith(str(builds / "dependency" / "pgo"))
    assert "LD_LIBRARY_PATH" not in raw["baseline"]["env"]
    # trained under the program of the step before: the profile has the solver's counts
    assert list((builds / "dependency" / "pgo-profile").rglob("*.gcda"))


def test_a_library_the_program_loads_from_its_rpath_is_refused_before_training(
    examples_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DT_RPATH beats LD_LIBRARY_PATH: the instrumented library would never run, so the
    loader's answer is the reason given, not "the training run wrote no profile"."""
    hotlib = (
        f"cc -O2 -g $CFLAGS -o $OUT/hotlib {ROOT}/examples/k2/hotlib.c -L{examples_built} "
        f"-lsolver -Wl,--disable-new-dtags,-rpath,{examples_built} $LDFLAGS"
    )
    status = main(
        ["try", "combined", "--store", str(tmp_path / "store"), "--runs", "3", "--build",
         hotlib, "--dependency", "libsolver.so", "--dependency-build", SOLVER_BUILD,
         "--dependency-variant", "pgo", "--", "{out}/hotlib", "500"]
    )  # fmt: skip
    assert status != 0
    err = capsys.readouterr().err
    assert f"still loads libsolver.so from {examples_built}" in err
    assert "wrote no profile" not in err


def test_try_combined_library_step_needs_its_build_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert try_combined(tmp_path, "--dependency", "libz3.so.4")[0] == 2
    assert "needs both --dependency SONAME and --dependency-build" in capsys.readouterr().err


def test_try_combined_library_variant_needs_its_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert try_combined(tmp_path, "--variant", "O3", "--dependency-variant", "pgo")[0] == 2
    err = capsys.readouterr().err
    assert "--dependency-variant needs --dependency SONAME" in err
    assert len(err.strip().splitlines()) == 1
