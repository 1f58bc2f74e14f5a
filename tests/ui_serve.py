"""For the browser tests over a store of their own: `perfsleuth serve` on a free port
with the UI built, and a Playwright flow file's results (tests/e2e/run_flows.mjs)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
CLI = [sys.executable, "-m", "perfsleuth.cli"]


@contextmanager
def served(store: Path, *options: str) -> Iterator[str]:
    """The URL of `perfsleuth serve` over STORE (with serve's OPTIONS), stopped on leaving."""
    subprocess.run(["bash", str(ROOT / "scripts" / "build-ui.sh")], check=True)
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--store", str(store), *options],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+/", line)
    try:
        assert match, f"serve printed no URL: {line!r}"
        yield match.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def flow_results(script: Path, url: str, *args: str, timeout: int = 180) -> dict[str, dict]:
    """What each flow of SCRIPT showed (`node SCRIPT URL ARTIFACTS ARGS...`); a failed
    flow fails the test with its error."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["node", str(script), url, str(ARTIFACTS), *args],
        capture_output=True,
        text=True,
        timeout=timeout,  # a bound for a loaded machine, not a measurement
    )
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            doc = json.loads(line)
            assert doc["ok"], f"{doc['flow']}: {doc.get('error')}"
            results[doc["flow"]] = doc["shown"]
    assert results, f"{script.name} ran no flow: {done.stderr[-2000:]}"
    return results
