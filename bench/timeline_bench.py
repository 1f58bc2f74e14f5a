"""Benchmark of the flame page's time order on a run of 1,000,000 samples over 110,000
stacks, side by side with speedscope's time order (its default view) of the same
samples in the same order, in one run on one machine.

The run is bench/ui_bench_data.py's, its samples put in a time order with some
locality: each stack's samples come in bursts of 1 + geometric(mean 4) samples, the
bursts shuffled, so the chart has ~200,000 runs of one stack (a tight loop sampled at
a few kHz repeats far less). Measured: the /timeline API's first (cold) and repeated
answers and their size; in headless Chromium (bench/timeline_bench.mjs): navigation
to the chart drawn and answering input, a zoom (Enter on a frame) and a zoom-out
(Escape) until painted, the graph view of the same run, and speedscope opening the
same samples.

Usage: .venv/bin/python bench/timeline_bench.py [--requests N]
       (writes bench/out/timeline_bench.json)
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

from ui_bench import percentiles, serve_speedscope, start_server, timed_get
from ui_bench_data import big_profile

from perfsleuth.model.profile import Profile
from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.model.timeline import Timeline
from perfsleuth.present.speedscope import SCHEMA
from perfsleuth.store.runs import Store

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
STORE = OUT / "timeline-store"
SPEEDSCOPE_JSON = OUT / "timeline.speedscope.json"
MEAN_BURST = 5


def in_time_order(profile: Profile, seed: int = 11) -> Timeline:
    rng = random.Random(seed)
    bursts = []
    for sid, _, count, thread, _ in profile.columns():
        while count:
            n = min(count, 1 + int(rng.expovariate(1 / (MEAN_BURST - 1))))
            bursts.append((sid, thread, n))
            count -= n
    rng.shuffle(bursts)
    timeline = Timeline()
    clock = 0
    for sid, thread, n in bursts:
        timeline.add(sid, thread, n, clock)
        clock += n * 250_000  # 4 kHz
    return timeline


def speedscope_file(profile: Profile, timeline: Timeline) -> None:
    """The same samples for speedscope: one sampled profile, a sample per run, weighted."""
    doc = {
        "$schema": SCHEMA,
        "shared": {"frames": [{"name": f.function} for f in profile.frames]},
        "profiles": [
            {
                "type": "sampled",
                "name": "timeline-bench",
                "unit": "none",
                "startValue": 0,
                "endValue": timeline.samples,
                "samples": [list(reversed(profile.stacks[sid])) for sid in timeline.stack],
                "weights": list(timeline.count),
            }
        ],
        "name": "timeline-bench",
        "activeProfileIndex": 0,
        "exporter": "perfsleuth bench/timeline_bench.py",
    }
    SPEEDSCOPE_JSON.write_text(json.dumps(doc, separators=(",", ":")))


def ensure_store() -> tuple[int, Timeline]:
    if (STORE / "runs.duckdb").exists() and SPEEDSCOPE_JSON.exists():
        store = Store(STORE)
        run_id = store.resolve("latest")
        return run_id, store.documents(run_id, Timeline.KIND)[Timeline.NAME]
    shutil.rmtree(STORE, ignore_errors=True)
    profile = big_profile()
    profile.timeline = in_time_order(profile)
    info = RunInfo(command="bigapp --synthetic (bench/timeline_bench.py)", mode="cpu")
    run_id = Store(STORE).add_run(info, Recording(profile)).id
    speedscope_file(profile, profile.timeline)
    return run_id, profile.timeline


def answer_bytes(port: int, path: str) -> dict:
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    con.request("GET", path)
    body = con.getresponse().read()
    con.close()
    return {"bytes": len(body), "gzip_bytes": len(gzip.compress(body, compresslevel=1))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10, help="repeated API requests")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    run_id, timeline = ensure_store()
    result: dict = {
        "load_average": os.getloadavg(),
        "samples": timeline.samples,
        "runs": len(timeline),
        "stacks": len(Store(STORE).load(run_id).stacks),
    }
    server, port = start_server(STORE)
    site, speedscope_url = serve_speedscope(SPEEDSCOPE_JSON, "timeline-speedscope-site")
    try:
        time.sleep(0.5)
        path = f"/api/runs/{run_id}/timeline"
        cold = timed_get(port, path)
        warm = [timed_get(port, path) for _ in range(args.requests)]
        result["api"] = {"cold_ms": cold, "warm_ms": percentiles(warm), **answer_bytes(port, path)}
        browser = subprocess.run(
            ["node", str(ROOT / "bench" / "timeline_bench.mjs"),
             f"http://127.0.0.1:{port}/", str(run_id), speedscope_url],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        result["browser"] = json.loads(browser.stdout.strip().splitlines()[-1])
        result["speedscope_json_bytes"] = SPEEDSCOPE_JSON.stat().st_size
    finally:
        server.terminate()
        server.wait(timeout=10)
        site.shutdown()
    ours = result["browser"]["time_order"]["open_ms"]["median"]
    theirs = result["browser"]["speedscope"]["open_ms"]["median"]
    result["open_ratio_vs_speedscope"] = ours / theirs
    result["load_average_after"] = os.getloadavg()
    (OUT / "timeline_bench.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
