"""The web UI's speed targets on a deep real profile, side by side with speedscope and
`go tool pprof -http` opening the same data.

The profile: g++ -O2 compiling a header-heavy C++ file several times, recorded with DWARF
stacks at 4 kHz (>= 50,000 samples, stacks > 60 frames deep: cc1plus's recursive-descent
parser). It is exported with `perfsleuth export --speedscope / --pprof` so the three tools
read the same samples. Measured, in headless Chromium:
- perfsleuth: a fresh `serve` (process start → flame graph painted, with and without the
  pages kept in answers/), the warm open, zoom, search, focus, ignore, hide, sandwich;
- speedscope 1.25 (its release site served locally): navigation → the graph drawn;
- pprof -http: process start → serving (it parses the profile first), navigation → its
  flame graph's boxes drawn, and a click zoom until painted.

Usage: .venv/bin/python bench/ui_deep_bench.py [--compiles N] [--cold N] [--rounds N]
(writes bench/out/ui_deep_bench.json; the recording is kept in bench/out/ui-deep-store)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

from ui_bench import CLI, OUT, browser_json, cold_opens, serve_speedscope, start_server

from perfsleuth.store.runs import Store

STORE = OUT / "ui-deep-store"
HEADERS = ["regex", "map", "unordered_map", "iostream", "algorithm", "functional", "future"]
HEADERS += ["variant", "optional", "filesystem", "chrono", "random", "sstream"]


def ensure_store(compiles: int) -> int:
    if (STORE / "runs.duckdb").exists():
        return Store(STORE).resolve("latest")
    shutil.rmtree(STORE, ignore_errors=True)
    source = OUT / "deep-headers.cc"
    includes = "".join(f"#include <{h}>\n" for h in HEADERS)
    source.write_text(includes + 'int main() { std::regex r("a+b"); return 0; }\n')
    loop = f"for i in $(seq {compiles}); do g++ -O2 -c {source} -o /dev/null; done"
    record = ["record", "--quiet", "--freq", "4000", "--call-graph", "dwarf", "--", "sh", "-c"]
    subprocess.run([*CLI, "--store", str(STORE), *record, loop], check=True)
    return Store(STORE).resolve("latest")


def export(run_id: int, option: str, name: str) -> Path:
    path = OUT / name
    subprocess.run(
        [*CLI, "--store", str(STORE), "export", str(run_id), option, str(path)],
        check=True,
        capture_output=True,
    )
    return path


def profile_shape(folded: Path) -> tuple[dict, list[str]]:
    """The deepest stack and the sample-weighted mean depth; and four search / filter
    expressions a user of this profile would type: named frames at 3 levels of weight,
    and a name's prefix as a regex."""
    totals: Counter[str] = Counter()
    weight = deepest = weighted_depth = 0
    for line in folded.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        n = int(count)
        weight += n
        deepest = max(deepest, len(frames))
        weighted_depth += n * len(frames)
        for name in set(frames):
            totals[name] += n
    named = [name for name, _ in totals.most_common() if name[0].isalpha() and len(name) > 4]
    prefix = "".join(c for c in named[20].split("(")[0][:8] if c.isalnum() or c == "_")
    # Escaped: a C++ name's parentheses and `*` are regex syntax (unescaped, `f(int)` matched
    # no frame and `tree_node**` was no expression at all, so focus drew an empty graph).
    queries = [re.escape(named[10]), re.escape(named[30]), re.escape(named[100]), f"^{prefix}.*"]
    return {"deepest": deepest, "mean_depth": weighted_depth / weight}, queries


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pprof_side(profile: Path, rounds: int) -> dict:
    """`go tool pprof -http`: seconds from its start until it serves, then the browser."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/ui/flamegraph"
    start = time.perf_counter()
    server = subprocess.Popen(
        ["go", "tool", "pprof", f"-http=127.0.0.1:{port}", "-no_browser", str(profile)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                urllib.request.urlopen(url, timeout=300).read()
                break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit("go tool pprof exited before serving") from None
                time.sleep(0.02)
        serving = (time.perf_counter() - start) * 1000
        opened = browser_json("pprof_open.mjs", url, str(rounds))
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {"serving_ms": serving, **opened}


def perfsleuth_and_speedscope(run_id: int, speedscope: Path, queries: list[str]) -> dict:
    server, port = start_server(STORE)
    site, speedscope_url = serve_speedscope(speedscope, "speedscope-deep-site")
    args = (f"http://127.0.0.1:{port}/", str(run_id), speedscope_url, "-", json.dumps(queries))
    try:
        return browser_json("ui_bench.mjs", *args)
    finally:
        server.terminate()
        server.wait(timeout=10)
        site.shutdown()


def table(result: dict) -> str:
    ui, ss, pp = result["browser"]["ui"], result["browser"]["speedscope"], result["pprof"]
    kept = result["cold_server"]["kept_flame"]["total_ms"]["median"]
    never = result["cold_server"]["first_ever"]["total_ms"]["median"]
    pprof_first = pp["serving_ms"] + pp["open_ms"]["median"]
    rows = [
        (
            "fresh server → painted, pages kept / never kept",
            f"{kept:.0f} / {never:.0f} ms",
            f"pprof -http start → painted {pprof_first:.0f} ms",
            f"{kept / pprof_first:.2f}×",
        ),
        (
            "open, warm server (navigation → interactive)",
            f"{ui['open_ms']['median']:.0f} ms",
            f"speedscope {ss['open_ms']['median']:.0f} ms; pprof {pp['open_ms']['median']:.0f} ms",
            f"{ui['open_ms']['median'] / ss['open_ms']['median']:.2f}× / "
            f"{ui['open_ms']['median'] / pp['open_ms']['median']:.2f}×",
        ),
        (
            "zoom until painted, p95",
            f"{ui['zoom_ms']['p95']:.0f} ms",
            f"pprof {pp['zoom_ms']['p95']:.0f} ms",
            f"{ui['zoom_ms']['p95'] / pp['zoom_ms']['p95']:.2f}×",
        ),
    ]
    for kind in ("search", "focus", "ignore", "hide", "sandwich"):
        value = ui[f"{kind}_ms"]
        shown = f"{value['p95']:.0f} ms ({value['median']:.0f})"
        if f"{kind}_polled_ms" in ui:  # as timed before the frames were counted from the draw
            polled = ui[f"{kind}_polled_ms"]
            shown += f"; polled {polled['p95']:.0f} ms ({polled['median']:.0f})"
        rows.append((f"{kind} until painted, p95 (median)", shown, "target 100 ms", ""))
    lines = [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(["| what | perfsleuth | peer | ratio |", "| --- | --- | --- | --- |", *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiles", type=int, default=4, help="g++ runs in the recording")
    parser.add_argument("--cold", type=int, default=3, help="fresh-server first opens of each kind")
    parser.add_argument("--rounds", type=int, default=3, help="pprof page opens")
    args = parser.parse_args()
    if not shutil.which("go"):
        raise SystemExit("go is not installed: `go tool pprof` is the peer measured here")
    OUT.mkdir(parents=True, exist_ok=True)
    run_id = ensure_store(args.compiles)
    shape, queries = profile_shape(export(run_id, "--folded", "ui-deep.folded"))
    speedscope = export(run_id, "--speedscope", "ui-deep.speedscope.json")
    pprof = export(run_id, "--pprof", "ui-deep.pb.gz")
    shape["samples"] = next(r.samples for r in Store(STORE).runs() if r.id == run_id)
    result: dict = {"load_average": os.getloadavg(), "profile": shape, "queries": queries}
    result["cold_server"] = cold_opens(run_id, args.cold, STORE)
    result["browser"] = perfsleuth_and_speedscope(run_id, speedscope, queries)
    result["pprof"] = pprof_side(pprof, args.rounds)
    result["load_average_after"] = os.getloadavg()
    (OUT / "ui_deep_bench.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    print(table(result))


if __name__ == "__main__":
    main()
