"""The timeouts of waits for events in offcpu mode's records (meta wait_timeouts), on
bpftrace's captured output of examples/bin/eventwait (offcpu.script_text()): its
consumer in epoll_wait with no timeout (block) or in poll() with a 1 ms one (poll)."""

import ctypes
import os
from pathlib import Path

import pytest

from perfsleuth.collect import offcpu
from perfsleuth.collect.target import ProcessMaps
from perfsleuth.formats.tool_output import bpftrace_stacks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu"


@pytest.mark.parametrize(
    ("program", "consumer", "timeout"), [("block", 7758, -1), ("poll", 8659, 1)]
)
def test_the_consumer_s_sampled_waits_carry_the_timeout_it_passed(program, consumer, timeout):
    text = (FIXTURES / f"bpftrace-offcpu-eventwait-{program}.json").read_text()
    records = bpftrace_stacks.records(bpftrace_stacks.parse(text), {})
    profile = offcpu.to_profile(records, ProcessMaps(os.getpid()), guess_cut_waits=True)
    timeouts = profile.meta["wait_timeouts"]
    assert {(tid, ms) for tid, ms, _ns in timeouts} == {(consumer, timeout)}
    assert all(ns > 0 for _tid, _ms, ns in timeouts)


def _libc_address(function: str) -> int:
    """An address inside one of this process's libc functions."""
    return ctypes.cast(getattr(ctypes.CDLL(None), function), ctypes.c_void_p).value + 4


def test_samples_on_the_cpu_inside_a_wait_for_events_are_kept_as_its_waiting():
    """offcpu mode keeps the on-CPU samples inside lock calls as waiting, as a clock
    around the call counts them; memcached's workers' epoll_wait read 4.8 points under
    such a clock without its own. A read's samples are its work: dropped."""
    records = [
        bpftrace_stacks.OffCpuRecord(
            os.getpid(), 1000 + i, "R", (), (_libc_address(f),), "worker", 1e6, on_cpu=True
        )
        for i, f in enumerate(("epoll_wait", "poll", "read"))
    ]
    maps = ProcessMaps(os.getpid())
    maps.snapshot()
    profile = offcpu.to_profile(records, maps)
    kept = {profile.threads[t].tid: state for _s, _w, _c, t, state in profile.rows()}
    assert kept == {1000: "io", 1001: "io"}
