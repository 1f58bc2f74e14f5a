"""The timeouts of waits for events in offcpu mode's records (meta wait_timeouts), on
bpftrace's captured output of examples/bin/eventwait (offcpu.script_text()): its
consumer in epoll_wait with no timeout (block) or in poll() with a 1 ms one (poll)."""

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
