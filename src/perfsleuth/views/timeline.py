"""The time-order view's data: a run's samples in the order they were taken, as
runs of one stack placed on the nodes of the flame graph the page already has.

The flame graph (views/flame.py) of the same profile and filters gives the
nodes; each run of the Timeline document becomes (its stack's leaf node, how many
samples, when the first was taken), so the page draws the chart with the flame
graph's names, colours and frames, and fetches no stacks twice. Sent as binary:

    u32 header length | header JSON | padding to 8 |
    f64 time per run (ns after the first sample) | u32 leaf node per run | u32 count per run |
    u32 thread per run (an index into the header's `threads`, [tid, name] each;
    NO_THREAD for none)

Runs of one stack merge only within one thread, so the page can split the runs into
one lane per thread (the time order's "lanes").
"""

from __future__ import annotations

import json
import struct
from array import array

from ..model.profile import EXACT_UNITS, Profile
from ..model.run import RunInfo
from ..model.timeline import Timeline
from .flame import FlameColumns

NO_THREAD = 0xFFFFFFFF


def encode(profile: Profile, flame: FlameColumns, timeline: Timeline, tids: set[int]) -> bytes:
    """The runs of the threads `tids` (every thread when empty), merged where two runs
    of one stack and thread follow each other once the other threads are left out."""
    keep = [not tids or (t.tid in tids) for t in profile.threads]
    time, node, count, lane = array("d"), array("I"), array("I"), array("I")
    start = timeline.time_ns[0] if len(timeline) else 0
    for sid, thread, n, t in zip(
        timeline.stack, timeline.thread, timeline.count, timeline.time_ns, strict=True
    ):
        leaf = flame.leaf_for(sid, thread)
        if leaf < 0 or (tids and (thread < 0 or not keep[thread])):
            continue
        own = thread if thread >= 0 else NO_THREAD
        if node and node[-1] == leaf and lane[-1] == own:
            count[-1] += n
            continue
        time.append(float(t - start))
        node.append(leaf)
        count.append(n)
        lane.append(own)
    end = timeline.time_ns[-1] - start if len(timeline) else 0
    threads = [[t.tid, t.name] for t in profile.threads]
    header = json.dumps(
        {
            "runs": len(node),
            "samples": sum(count),
            "duration_ns": end,
            "unit": profile.unit,
            "threads": threads,
        }
    ).encode()
    padding = b" " * (-(4 + len(header)) % 8)
    parts = [struct.pack("<I", len(header) + len(padding)), header, padding]
    return b"".join([*parts, time.tobytes(), node.tobytes(), count.tobytes(), lane.tobytes()])


def missing(info: RunInfo) -> str:
    """Why run `info` has no time order, in the user's terms."""
    run = f"run {info.id}"
    if info.unit in EXACT_UNITS:
        return f"{run} counts {info.unit} exactly (valgrind); it took no timed samples"
    imported = info.source.removeprefix("import:")
    if imported != info.source and imported != "perf.data":
        return f"{run} was imported from {imported}, which keeps no sample times"
    if info.mode in ("offcpu", "wall", "all", "python"):
        merged = "its samples are merged from several recorders without their times"
        return f"{run} is a {info.mode} run; {merged}"
    return (
        f"{run} keeps no sample times: it was recorded before perfsleuth kept them, or its "
        "samples carry none (perf script output without the time field); re-record it"
    )
