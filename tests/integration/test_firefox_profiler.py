"""`export --firefox` loaded by the Firefox Profiler's own code: its command-line client
(@firefox-devtools/profiler-cli from npm, ui/package.json) bundles the profiler's profile
loading, upgrading and call-tree code. Every thread and each function's self and total
weight it reports must be the run's."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import perfsleuth
from uistore import make_store

from perfsleuth.model.profile import Profile
from perfsleuth.store.runs import Store

pytestmark = pytest.mark.integration

CLI = (
    Path(__file__).resolve().parents[2]
    / "ui/node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js"
)
READY_BOUND_S = 120  # a bound for a loaded machine, not a measurement


class Profiler:
    def __init__(self, sessions: Path) -> None:
        assert CLI.is_file(), f"{CLI} is missing: run scripts/build-ui.sh (npm install in ui/)"
        self.env = {
            **os.environ,
            "PROFILER_CLI_SESSION_DIR": str(sessions),
            "PROFILER_CLI_NO_SYMBOLICATE": "1",
        }

    def run(self, *args: str) -> subprocess.CompletedProcess:
        command = ["node", str(CLI), *args]
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=300)

    def load(self, path: Path) -> None:
        """`load` starts a daemon; on a loaded machine it may answer after the client gave
        up waiting (it says so), so ask until the session answers."""
        self.run("load", str(path))
        deadline = time.monotonic() + READY_BOUND_S
        while self.run("thread", "list", "--json").returncode != 0:
            assert time.monotonic() < deadline, self.run("thread", "list").stderr
            time.sleep(0.5)

    def json(self, *args: str) -> dict:
        done = self.run(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def profiler(tmp_path: Path) -> Iterator[Profiler]:
    client = Profiler(tmp_path / "sessions")
    yield client
    client.run("stop", "--all")


def per_function(profile: Profile, tid: int) -> dict[str, tuple[float, float]]:
    """function -> (self, total) weight of one thread, from the stored run."""
    own: dict[str, float] = defaultdict(float)
    under: dict[str, float] = defaultdict(float)
    for stack, weight, _count, thread, _state in profile.rows():
        if profile.threads[thread].tid != tid:
            continue
        names = [profile.frames[f].function for f in stack]
        own[names[0]] += weight
        for name in set(names):
            under[name] += weight
    return {name: (own.get(name, 0.0), under[name]) for name in under}


def test_the_profiler_reads_every_thread_and_weight(tmp_path: Path, profiler: Profiler) -> None:
    store, _ = make_store(tmp_path)
    exported = tmp_path / "run2.json"
    perfsleuth(store.root, "export", "2", "--firefox", str(exported))
    profile = Store(store.root).load(2)
    profiler.load(exported)

    threads = profiler.json("thread", "list")["threads"]
    assert sorted((t["name"], t["tid"]) for t in threads) == sorted(
        (t.name, t.tid) for t in profile.threads
    )
    for thread in threads:
        functions = profiler.json(
            "thread", "functions", "--thread", thread["threadHandle"], "--limit", "0",
            "--include-idle",
        )["functions"]  # fmt: skip
        read = {f["name"]: (f["selfSamples"], f["totalSamples"]) for f in functions}
        assert read == per_function(profile, thread["tid"])
