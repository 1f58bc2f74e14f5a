"""py-spy's stalls and python mode's splice: shares of timed_pair.py's crunch and spell
against the script's own timers, with py-spy's held stack (the splice before stalls were
told) and with the stall rule (formats/tool_output/python_splice.py's _Stalls).

Records examples/python/timed_pair.py in python mode RUNS times on each interpreter
given (perf + py-spy, as `perfsleuth record --freq 499` does, the recording kept), then
splices each recording twice: as recorded, and with STALLS stalls of --stall seconds cut
into py-spy's trace (no change from a point on: its last stack held, as its trace gives
it when it waits for a CPU), at evenly spread points of the run. A real stall is rare and
unannounced; the cut-in ones give the rule something to tell on every run. Prints per
run crunch's share of main by the timers, held and by the rule, and the worst and mean
points off the timers of each. Run it beside some load (it is the point):

Usage: .venv/bin/python bench/python_stalls.py [--runs 3] [--stall 0.6] PYTHON...
(default: Debian's python3.11)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from unittest import mock

from perfsleuth.collect.options import RecordOptions
from perfsleuth.collect.python_perf import record_python
from perfsleuth.formats.tool_output import perf_samples, py_spy_trace, python_splice

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "python" / "timed_pair.py"
STALLS = 4
# runs the script's main (argv: SCRIPT SECONDS OUT) and writes its timers to OUT
TIMED = (
    "import json, runpy, sys\n"
    "spent = runpy.run_path(sys.argv[1])['main'](float(sys.argv[2]))\n"
    "open(sys.argv[3], 'w').write(json.dumps(spent))\n"
)


def recorded(python: str, workdir: Path) -> tuple[list, dict, float]:
    """One python-mode recording's samples of the script, py-spy's timelines and the
    script's crunch share by its timers."""
    origins: list[float] = []
    read = py_spy_trace.read

    def keep_origin(path: Path, origin: float) -> dict:
        origins.append(origin)
        return read(path, origin)

    timers = workdir / "timers.json"
    cmd = [python, "-c", TIMED, str(SCRIPT), "3", str(timers)]
    with mock.patch.object(py_spy_trace, "read", keep_origin):
        record_python(RecordOptions(mode="python", freq=499), cmd, workdir)
    trace = next(workdir.glob("py-spy-*.json"))
    pid = int(trace.stem.rpartition("-")[2])
    with (workdir / "perf.txt").open(errors="replace") as text:
        samples = [s for s in perf_samples.samples(text, "perf.txt") if s.pid == pid]
    spent = json.loads(timers.read_text())
    return samples, py_spy_trace.read(trace, origins[0]), spent["crunch"] / spent["user"]


def with_stalls(timelines: dict, start: float, end: float, seconds: float) -> dict:
    """The timelines without the changes of STALLS stretches of SECONDS."""
    starts = [start + (end - start) * (i + 0.5) / (STALLS + 1) for i in range(STALLS)]
    out = {}
    for tid, timeline in timelines.items():
        kept = [
            (when, stack)
            for when, stack in zip(timeline.times, timeline.stacks, strict=True)
            if not any(s < when < s + seconds for s in starts)
        ]
        times, stacks = [w for w, _ in kept], [s for _, s in kept]
        out[tid] = py_spy_trace.Timeline(timeline.name, times, stacks)
    return out


def crunch_share(samples: list, timelines: dict, held: bool) -> float:
    steps = math.inf if held else python_splice.STALL_STEPS
    with mock.patch.object(python_splice, "STALL_STEPS", steps):
        lines = python_splice.splice(samples, timelines).lines
    count = {"main": 0, "crunch": 0}
    for line, n in lines.items():
        names = {frame.rpartition(" (")[0] for frame in line.split(";") if "timed_pair" in frame}
        for name in count.keys() & names:
            count[name] += n
    return count["crunch"] / count["main"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stall", type=float, default=0.6, help="seconds of each cut-in stall")
    parser.add_argument("pythons", nargs="*", default=["/usr/bin/python3.11"])
    args = parser.parse_args()
    off: dict[str, list[float]] = {}
    for python in args.pythons:
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="python-stalls-") as tmp:
                samples, timelines, timers = recorded(python, Path(tmp))
            start, end = samples[0].time, samples[-1].time
            cut = with_stalls(timelines, start, end, args.stall)
            for trace, given in (("as recorded", timelines), ("stalls cut in", cut)):
                held, rule = (crunch_share(samples, given, h) for h in (True, False))
                off.setdefault(f"{trace}, held", []).append(abs(held - timers))
                off.setdefault(f"{trace}, rule", []).append(abs(rule - timers))
                print(
                    f"{python} {trace}: crunch timers {timers:.3f} held {held:.3f} rule {rule:.3f}",
                    flush=True,
                )
    for name, points in off.items():
        print(
            f"{name}: worst {100 * max(points):.1f} mean {100 * sum(points) / len(points):.1f} "
            "points off the timers",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
