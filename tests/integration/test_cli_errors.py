"""Bad input gets one clear line, a non-zero exit, no traceback, and an unchanged store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def perfsleuth(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "perfsleuth.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_clean_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsleuth:")]
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture
def seeded_store(tmp_path: Path, examples_built: Path) -> Path:
    """A store with one real run, to check that failures leave it unchanged."""
    proc = perfsleuth(
        "record", "--store", "store", "--", str(examples_built / "hotspots"), "200000", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "store"


def runs_of(store: Path) -> str:
    return perfsleuth("runs", "--store", str(store), "--format", "json", cwd=store.parent).stdout


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


BAD_FILES = {
    "empty": (b"", "empty"),
    "garbage": (os.urandom(4096), "format"),
    "truncated": (None, "perf.data"),
    "bad-pprof": (None, "pprof"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_import_leaves_store_unchanged(kind: str, seeded_store: Path, tmp_path: Path):
    data, word = BAD_FILES[kind]
    if kind == "truncated":
        full = tmp_path / "full.data"
        subprocess.run(
            ["perf", "record", "-q", "-g", "-o", str(full), "--", "sleep", "0.2"],
            check=True,
            capture_output=True,
        )
        data = full.read_bytes()[: full.stat().st_size // 2]
    if kind == "bad-pprof":
        data = bad_pprof_bytes()
    before = runs_of(seeded_store)
    proc = perfsleuth(
        "import", "--store", str(seeded_store), str(write(tmp_path / kind, data)), cwd=tmp_path
    )
    assert_clean_error(proc, word)
    assert runs_of(seeded_store) == before


def bad_pprof_bytes() -> bytes:
    from perfsleuth.formats import profile_pb2

    prof = profile_pb2.Profile()
    prof.string_table.extend(["", "samples", "count", "main"])
    st = prof.sample_type.add()
    st.type, st.unit = 1, 2
    sample = prof.sample.add()
    sample.location_id.append(7)  # no such location
    sample.value.append(1)
    return prof.SerializeToString()


def test_command_not_found(tmp_path: Path):
    proc = perfsleuth("record", "--store", "s", "--", "no-such-command-xyz", cwd=tmp_path)
    assert_clean_error(proc, "not found", "no-such-command-xyz")
    assert not (tmp_path / "s").exists()


def test_dead_pid(tmp_path: Path):
    child = subprocess.Popen(["true"])
    child.wait()
    proc = perfsleuth(
        "record", "--store", "s", "--pid", str(child.pid), "--duration", "1", cwd=tmp_path
    )
    assert_clean_error(proc, "no process", str(child.pid))


def test_unknown_run_and_function(seeded_store: Path):
    assert_clean_error(
        perfsleuth("top", "--store", str(seeded_store), "42", cwd=seeded_store.parent), "no run"
    )
    assert_clean_error(
        perfsleuth("callers", "--store", str(seeded_store), "nosuchfunc", cwd=seeded_store.parent),
        "nosuchfunc",
    )


def test_missing_store(tmp_path: Path):
    assert_clean_error(perfsleuth("top", "--store", "nowhere", cwd=tmp_path), "no runs")


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_perf_not_permitted(tmp_path: Path):
    """As an unprivileged user, attaching to a process of root's is refused clearly."""
    tmp_path.chmod(0o777)
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "perfsleuth.cli",
            "record",
            "--store",
            str(tmp_path / "s"),
            "--pid",
            "1",
            "--duration",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
    )
    assert_clean_error(proc, "1")


def test_stripped_binary_records_with_a_warning(tmp_path: Path, examples_built: Path):
    stripped = tmp_path / "stripped"
    shutil.copy(examples_built / "hotspots", stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    proc = perfsleuth("record", "--store", "s", "--", str(stripped), "300000", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warning = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert len(warning) == 1 and "no function name" in warning[0] and "-g" in warning[0]


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_store_without_write_permission():
    """A store another user owns is refused in one line, and left as it was."""
    with tempfile.TemporaryDirectory() as top:  # under /tmp, so another user can reach it
        root = Path(top)
        root.chmod(0o755)
        stacks = "main;work 5\n"
        assert perfsleuth_stdin(stacks, "import", "--store", "s", "-", cwd=root).returncode == 0
        before = {p.name: p.stat().st_size for p in (root / "s").iterdir()}
        proc = perfsleuth_stdin(stacks, "import", "--store", "s", "-", cwd=root, user=65534)
        assert_clean_error(proc, "cannot write to the store", "Permission denied")
        assert {p.name: p.stat().st_size for p in (root / "s").iterdir()} == before


def perfsleuth_stdin(
    stdin: str, *args: str, cwd: Path, user: int | None = None
) -> subprocess.CompletedProcess:
    as_user = [] if user is None else ["setpriv", f"--reuid={user}", f"--regid={user}"]
    return subprocess.run(
        [*as_user, *(["--clear-groups"] if user is not None else [])]
        + [sys.executable, "-m", "perfsleuth.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
    )
