"""Benchmark of the web UI on a run of 1,000,000 samples and >= 100,000 distinct stacks.

Measures the first open of the flame page on a fresh server process (from starting
`perfsleuth serve` to the graph painted; once with the store as recorded, once with
the flame graph the first server kept in <store>/answers/), the API's latency for
TopN and flame-graph requests (first, cold answer and p50/p95 of repeated ones), then
in headless Chromium (bench/ui_bench.mjs): time to an interactive flame graph, zoom,
search, focus, ignore, hide and sandwich latency until painted, the same open for the
single-file HTML report, and speedscope opening the same profile.

Usage: .venv/bin/python bench/ui_bench.py [--requests N]   (writes bench/out/ui_bench.json)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ui_bench_data import big_profile

from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.present import PROFILE, TitledProfile, write
from perfsleuth.store.runs import Store

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
STORE = OUT / "ui-store"
SPEEDSCOPE_DIST = ROOT / "ui" / "node_modules" / "speedscope" / "dist" / "release"
CLI = [sys.executable, "-m", "perfsleuth.cli"]


def ensure_store() -> int:
    if (STORE / "runs.duckdb").exists():
        return Store(STORE).resolve("latest")
    shutil.rmtree(STORE, ignore_errors=True)
    profile = big_profile()
    info = RunInfo(command="bigapp --synthetic (bench/ui_bench_data.py)", mode="cpu")
    run_id = Store(STORE).add_run(info, Recording(profile)).id
    single = big_profile()
    single.sample_thread = [-1] * len(single.sample_thread)  # one speedscope profile
    speedscope_json = str(OUT / "ui-bench.speedscope.json")
    write(PROFILE, TitledProfile(single, "ui-bench"), "speedscope", speedscope_json)
    return run_id


def start_server(store: Path = STORE) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--store", str(store)], stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    match = re.search(r":(\d+)/", proc.stderr.readline())
    if not match:
        proc.terminate()
        raise SystemExit("perfsleuth serve printed no URL")
    return proc, int(match.group(1))


def browser_json(script: str, *args: str) -> dict:
    """Run bench/SCRIPT (a Node + Playwright half) and read the JSON document it prints last."""
    out = subprocess.run(
        ["node", str(ROOT / "bench" / script), *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed_get(port: int, path: str) -> float:
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    con.request("GET", path, headers={"Accept-Encoding": "gzip"})  # as browsers send
    response = con.getresponse()
    response.read()
    elapsed = time.perf_counter() - start
    con.close()
    if response.status != 200:
        raise SystemExit(f"{path}: HTTP {response.status}")
    return elapsed * 1000


def percentiles(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median": ordered[len(ordered) // 2],
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "max": ordered[-1],
    }


def api_latency(port: int, run_id: int, requests: int) -> dict:
    paths = {
        "flame": f"/api/runs/{run_id}/flame",
        "top_function": f"/api/runs/{run_id}/top?by=function",
        "top_line": f"/api/runs/{run_id}/top?by=line",
        "flame_state_mutex": f"/api/runs/{run_id}/flame?state=mutex",
    }
    out = {}
    for name, path in paths.items():
        cold = timed_get(port, path)
        warm = [timed_get(port, path) for _ in range(requests)]
        out[name] = {"cold_ms": cold, "warm_ms": percentiles(warm)}
    return out


def cold_open(run_id: int, kept: bool, store: Path = STORE) -> dict:
    """Start a fresh server, open the flame page once: ms to listening, and to painted."""
    if not kept:
        shutil.rmtree(store / "answers", ignore_errors=True)
    files_before = _kept_files(store)
    start = time.perf_counter()
    server, port = start_server(store)
    listening = (time.perf_counter() - start) * 1000
    try:
        ui = f"http://127.0.0.1:{port}/"
        opened = browser_json("ui_bench.mjs", "--open-once", ui, str(run_id))
    finally:
        server.terminate()
        server.wait(timeout=10)
    opened = opened["open_ms"]
    # In a checkout being edited, a changed source file makes new files (store/answers.code_stamp).
    recomputed = _kept_files(store) != files_before
    times = {"listening_ms": listening, "open_ms": opened, "total_ms": listening + opened}
    return {**times, "recomputed": recomputed}


def _kept_files(store: Path) -> set[str]:
    folder = store / "answers"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def cold_opens(run_id: int, repeats: int, store: Path = STORE) -> dict:
    out = {}
    for name, kept in (("first_ever", False), ("kept_flame", True)):
        runs = [cold_open(run_id, kept, store) for _ in range(repeats)]
        times = ("listening_ms", "open_ms", "total_ms")
        out[name] = {key: percentiles([r[key] for r in runs]) for key in times}
        out[name]["recomputed"] = [r["recomputed"] for r in runs]
    return out


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve_speedscope(
    profile: Path = OUT / "ui-bench.speedscope.json", site_name: str = "speedscope-site"
) -> tuple[ThreadingHTTPServer, str]:
    site = OUT / site_name
    shutil.rmtree(site, ignore_errors=True)
    shutil.copytree(SPEEDSCOPE_DIST, site)
    shutil.copy(profile, site / "profile.json")
    handler = partial(QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    return server, f"http://127.0.0.1:{port}/index.html#profileURL=/profile.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="repeated API requests")
    parser.add_argument("--cold", type=int, default=3, help="fresh-server first opens of each kind")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    run_id = ensure_store()
    report = OUT / "ui-bench-report.html"
    subprocess.run(
        [*CLI, "report", str(run_id), "--store", str(STORE), "-o", str(report)], check=True
    )
    result: dict = {"load_average": os.getloadavg(), "cold_server": cold_opens(run_id, args.cold)}
    server, port = start_server()
    site, speedscope_url = serve_speedscope()
    try:
        time.sleep(0.5)
        result["api"] = api_latency(port, run_id, args.requests)
        ui = f"http://127.0.0.1:{port}/"
        pages = (ui, str(run_id), speedscope_url, str(report))
        result["browser"] = browser_json("ui_bench.mjs", *pages)
        result["report_bytes"] = report.stat().st_size
        result["speedscope_json_bytes"] = (OUT / "ui-bench.speedscope.json").stat().st_size
    finally:
        server.terminate()
        server.wait(timeout=10)
        site.shutdown()
    result["load_average_after"] = os.getloadavg()
    (OUT / "ui_bench.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
