"""Python mode on the CPython builds people run, for real: each records
examples/python/timed_pair.py, whose two hot functions time their own user CPU, and
`top` must show both with file:line and shares within 8 points of the script's timers.

The interpreters come from scripts/install-pythons.sh (`make setup`, under
.venv/pythons/): Debian's python3.11 (libpython linked into the executable) and a venv
of it, a pyenv-style layout whose python3.11 runs the interpreter from Debian's shared
libpython3.11.so.1.0 and a venv of that, python-build-standalone's 3.10 (uv's and rye's
managed Pythons) and a venv of it, `uv run` (the interpreter a child of uv), a
shell shim that execs the interpreter half a second late, and `--pid`. pyenv's own
builds (3.9 to 3.13, shared libpython) and its shim are recorded when this machine has
them; a fresh machine does not, and those tests say so as skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfsleuth.store.runs import Store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "python" / "timed_pair.py"
PYTHONS = ROOT / ".venv" / "pythons"
UV = Path(sys.executable).with_name("uv")
PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
PERFSLEUTH = [sys.executable, "-m", "perfsleuth.cli"]
SECONDS = "2"  # of user CPU in the two functions: ~1,000 samples at 499 Hz
FREQ = "499"
HOT = ("crunch", "spell")
# A share from ~1,000 samples is within 1.6 points of the truth 95% of the time, but
# py-spy stalls now and then, and a stall's middle keeps native frames, so the shares
# come from the rest of the run (docs/python.md): a kept run was 7.6 points off at load
# 20 (pyenv 3.10.13), one of bench/python_shares.py's 7.0 at load 14 (pyenv 3.12.1,
# py-spy stalled through 54% of its samples). Of 41 kept runs of this test's recording
# at load 2-17 after issue 33's splice fixes, the worst was 3.7 (pyenv 3.11.7 read crunch
# 7.5-11 under at load 2-3 before them: the two functions swapped). The 5-point target is
# measured in bench/python_shares.py; a test must hold on any run.
CLOSE = 0.08
# A function's self share is its total less the native frames kept above it: libpython's
# unicode_dealloc and PyThread_get_thread_ident (py-spy --native keeps them), and the
# kernel's frames of the interrupts that came in while it ran, reschedule IPIs more as
# the load grows: up to 4.8 points of spell's on pyenv's 3.11.7 at load 2-17, 6.3 at load
# 15.5. The interpreter's own functions are left out (before, crunch's self was 11.4 of
# its 50.7 points)
ABOVE = 0.10


def perfsleuth(store: Path, *args: str) -> subprocess.CompletedProcess:
    argv = [*PERFSLEUTH, args[0], "--store", str(store), *args[1:]]
    return subprocess.run(argv, capture_output=True, text=True, timeout=240)


def timers(stdout: str) -> dict[str, float]:
    """The script's own shares of main's user CPU, from its JSON line."""
    spent = json.loads(stdout.strip().splitlines()[-1])
    return {name: spent[name] / spent["user"] for name in HOT}


def shares_in_main(store: Path) -> dict[str, dict]:
    """top's rows of the script, each function's total and self as shares of main's
    total."""
    done = perfsleuth(store, "top", "--total", "--format", "json", "-n", "500")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    rows = {r["function"]: r for r in rows if r["dso"] == "[python:timed_pair]"}
    assert set(HOT) | {"main"} <= set(rows), rows
    main = rows["main"]["total"]
    return {
        name: {**rows[name], "share": rows[name]["total"] / main, "self": rows[name]["self"] / main}
        for name in HOT
    }


def check_run(store: Path, expected: dict[str, float]) -> None:
    """Both functions with the script's file and a line; their shares within CLOSE of
    the timers, and their own time (the interpreter's work for them, as py-spy counts
    it) within ABOVE of their shares."""
    shown = shares_in_main(store)
    for name in HOT:
        row = shown[name]
        assert row["file"] == str(SCRIPT) and row["line"] > 0, row
        assert abs(row["share"] - expected[name]) <= CLOSE, (name, row["share"], expected)
        assert 0 <= row["share"] - row["self"] <= ABOVE, (name, row["share"], row["self"])
    meta = Store(store).run_info(1).meta
    assert meta["recorder"] == "perf+py-spy" and "python_frames_missing" not in meta
    assert meta["python_frames"] >= 0.9, meta
    # the samples py-spy's stalls left with native frames only are counted (and, with
    # python_frames >= 0.9, are under a tenth)
    assert isinstance(meta["samples_in_py_spy_stalls"], int), meta


def record(store: Path, *cmd: str) -> subprocess.CompletedProcess:
    done = perfsleuth(store, "record", "--freq", FREQ, "--", *cmd, str(SCRIPT), SECONDS)
    assert done.returncode == 0, done.stderr
    assert "no Python frames" not in done.stderr
    return done


def installed(name: str) -> Path:
    path = PYTHONS / name
    assert path.exists(), f"{path} missing: run `make setup` (scripts/install-pythons.sh)"
    return path


@pytest.mark.parametrize(
    "interpreter",
    [
        "debian-venv/bin/python",
        "shared-3.11/bin/python3.11",
        "shared-venv/bin/python",
        "standalone-3.10/bin/python3.10",
        "standalone-venv/bin/python",
    ],
)
def test_installed_interpreters_give_the_scripts_functions_and_shares(
    tmp_path: Path, interpreter: str
) -> None:
    store = tmp_path / "store"
    done = record(store, str(installed(interpreter)))
    check_run(store, timers(done.stdout))


def test_debians_own_python3(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = record(store, "/usr/bin/python3.11")
    check_run(store, timers(done.stdout))


def test_python_dash_m_in_a_venv(tmp_path: Path) -> None:
    store = tmp_path / "store"
    python = installed("shared-venv/bin/python")
    argv = [*PERFSLEUTH, "record", "--store", str(store), "--freq", FREQ, "--"]
    argv += [str(python), "-m", SCRIPT.stem, SECONDS]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=SCRIPT.parent)
    assert done.returncode == 0, done.stderr
    check_run(store, timers(done.stdout))


def test_the_shared_libpython_layout_is_what_pyenv_builds() -> None:
    """The launcher runs the interpreter from libpython, not from its own code."""
    launcher = installed("shared-3.11/bin/python3.11")
    linked = subprocess.run(["ldd", str(launcher)], capture_output=True, text=True, check=True)
    assert "libpython3.11.so.1.0" in linked.stdout
    nm = subprocess.run(["nm", "-D", str(launcher)], capture_output=True, text=True, check=True)
    assert "_PyEval_EvalFrameDefault" not in nm.stdout  # the eval loop is libpython's


def test_the_standalone_build_is_python_build_standalones() -> None:
    """The build uv and rye install: CPython 3.10 from python-build-standalone, clang,
    its libpython shared beside it (found through $ORIGIN)."""
    python = installed("standalone-3.10/bin/python3.10")
    asked = "import sys; print(sys.version)"
    said = subprocess.run([str(python), "-c", asked], capture_output=True, text=True, check=True)
    assert said.stdout.startswith("3.10.") and "Clang" in said.stdout, said.stdout
    linked = subprocess.run(["ldd", str(python)], capture_output=True, text=True, check=True)
    assert f"{python.parent}/../lib/libpython3.10.so.1.0" in linked.stdout, linked.stdout


def uv_run(store: Path, python: Path) -> subprocess.CompletedProcess:
    """`perfsleuth record -- uv run … timed_pair.py` with PYTHON, uv downloading none."""
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    argv = [*PERFSLEUTH, "record", "--store", str(store), "--freq", FREQ, "--", str(UV), "run"]
    argv += ["--no-project", "--offline", "--python", str(python), str(SCRIPT), SECONDS]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_uv_run_of_the_standalone_build(tmp_path: Path) -> None:
    store = tmp_path / "store"
    python = installed("standalone-3.10/bin/python3.10")
    done = uv_run(store, python)
    assert Store(store).run_info(1).meta["interpreter"] == str(python.resolve())
    check_run(store, timers(done.stdout))


def test_uv_run_starts_the_interpreter_as_a_child(tmp_path: Path) -> None:
    store = tmp_path / "store"
    python = installed("uv-venv/bin/python")
    done = uv_run(store, python)
    info = Store(store).run_info(1)
    assert info.mode == "python"  # told by `uv run … .py`
    assert info.meta["interpreter"] == str(python.resolve())  # uv's child, not uv
    check_run(store, timers(done.stdout))


def test_a_shim_that_execs_the_interpreter_late(tmp_path: Path) -> None:
    """pyenv's shims are shell scripts that exec the interpreter after their own work;
    on a loaded machine that work takes long: py-spy must wait for the interpreter."""
    shim = tmp_path / "shims" / "python3"
    shim.parent.mkdir()
    target = installed("shared-3.11/bin/python3.11")
    shim.write_text(f'#!/bin/sh\nsleep 0.5\nexec {target} "$@"\n')
    shim.chmod(0o755)
    store = tmp_path / "store"
    done = record(store, str(shim))
    check_run(store, timers(done.stdout))
    assert Store(store).run_info(1).meta["interpreter"] == str(target.resolve())


def test_pid_of_a_running_shared_libpython_interpreter(tmp_path: Path) -> None:
    python = installed("shared-3.11/bin/python3.11")
    proc = subprocess.Popen([str(python), str(SCRIPT), "6"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        store = tmp_path / "store"
        argv = ["record", "--freq", FREQ, "--pid", str(proc.pid), "--duration", "3"]
        done = perfsleuth(store, *argv)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert done.returncode == 0, done.stderr
    assert Store(store).run_info(1).mode == "python"
    check_run(store, timers(out))  # a steady loop: the window's shares are the run's


def pyenv_python(minor: str) -> Path:
    found = sorted(PYENV.glob(f"versions/{minor}.*/bin/python{minor}"))
    if not found:
        pytest.skip(f"pyenv's CPython {minor} is not installed on this machine")
    return found[-1]


@pytest.mark.parametrize("minor", ["3.9", "3.10", "3.11", "3.12", "3.13"])
def test_pyenv_builds_when_this_machine_has_them(tmp_path: Path, minor: str) -> None:
    store = tmp_path / "store"
    done = record(store, str(pyenv_python(minor)))
    check_run(store, timers(done.stdout))


def test_pyenvs_own_shim_when_this_machine_has_it(tmp_path: Path) -> None:
    shim = PYENV / "shims" / "python3"
    if not shim.exists():
        pytest.skip("pyenv is not installed on this machine")
    store = tmp_path / "store"
    done = record(store, str(shim))
    check_run(store, timers(done.stdout))


def test_a_cpython_py_spy_cannot_read_keeps_its_native_frames_and_says_so(tmp_path: Path) -> None:
    """A real CPython whose libpython has another name (as an embedding program may
    ship it): py-spy finds no interpreter in it. The run keeps perf's native frames,
    says why in one line and in its facts, and nothing claims Python frames."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    config = "/usr/lib/python3.11/config-3.11-x86_64-linux-gnu"
    lib = ["-Wl,--whole-archive", f"{config}/libpython3.11-pic.a", "-Wl,--no-whole-archive"]
    build = ["cc", "-shared", "-o", str(bin_dir / "libembedded.so"), *lib]
    subprocess.run([*build, "-Wl,-soname,libembedded.so", "-lexpat", "-lz", "-lm"], check=True)
    launcher = installed("shared-3.11/launcher.c")
    includes = ["-I/usr/include/python3.11"]
    link = [f"-L{bin_dir}", "-lembedded", "-Wl,-rpath,$ORIGIN"]
    python = bin_dir / "python3.11"
    subprocess.run(["cc", *includes, str(launcher), "-o", str(python), *link], check=True)
    store = tmp_path / "store"
    zlib_mixed = ROOT / "examples" / "python" / "zlib_mixed.py"
    done = perfsleuth(store, "record", "--", str(python), str(zlib_mixed), "60")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "no Python frames" in line]
    assert len(said) == 1 and "py-spy finds no CPython it can read" in said[0], done.stderr
    assert "pip install -U py-spy" in said[0] and "Traceback" not in done.stderr
    meta = Store(store).run_info(1).meta
    assert meta["python_frames"] == 0 and "py-spy finds no CPython" in meta["python_frames_missing"]
    top = perfsleuth(store, "top", "--total", "--format", "json", "-n", "100")
    rows = json.loads(top.stdout)["rows"]
    assert not any(r["dso"].startswith("[python:") for r in rows)
    assert any(r["dso"].startswith("libz.so") for r in rows)  # zlib's deflate, native


@pytest.mark.parametrize(
    "interpreter",
    ["/usr/bin/python3.11", "shared-3.11/bin/python3.11", "standalone-3.10/bin/python3.10"],
)
def test_python_findings_from_native_frames_say_so(tmp_path: Path, interpreter: str) -> None:
    """On each kind of build (libpython linked in, shared, python-build-standalone's):
    the interpreter's eval loop is told in its DSO, and the finding says it has no
    Python frames to go by."""
    python = Path(interpreter) if interpreter.startswith("/") else installed(interpreter)
    out = tmp_path / "run.json"
    elementwise = ROOT / "examples" / "python" / "elementwise.py"
    argv = ["run", "--mode", "cpu", "--format", "json", "-o", str(out), "--"]
    done = perfsleuth(tmp_path / "store", *argv, str(python), str(elementwise), "15")
    assert done.returncode == 0, done.stderr
    findings = {f["rule"]: f for f in json.loads(out.read_text())["findings"]}
    interpreter = findings["python.interpreter"]
    assert interpreter["evidence"][-1] == (
        "based on native frames only: this run has no Python frames "
        "(recorded in cpu mode, without py-spy)"
    )
