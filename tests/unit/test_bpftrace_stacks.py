"""perfsleuth's off-CPU bpftrace output: parsing captured real output, and spreading
the blocks whose stacks were not sampled so that time per thread and state is exact."""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from perfsleuth.formats.tool_output import bpftrace_stacks
from perfsleuth.formats.tool_output.bpftrace_stacks import Capture, SampledBlocks

# prodcons 5000 under collect/offcpu.py's script: stacks one switch-out in 8
FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "offcpu" / "bpftrace-offcpu-sampled.json"
)
MAIN = 5560
S, R = 1, 0  # sched_switch prev_state: sleeping, preempted


def fixture_capture() -> Capture:
    return bpftrace_stacks.parse(FIXTURE.read_text())


def test_parse_reads_sampled_stacks_unsampled_time_and_names():
    capture = fixture_capture()
    assert capture.names == {MAIN: "prodcons", 5650: "prodcons", 5651: "prodcons", 5652: "prodcons"}
    assert {s.weight for s in capture.sampled} == {1, 8}
    futex = [s for s in capture.sampled if "futex_wait" in s.kernel_stack]
    assert futex and all(s.block_class[2] == S for s in futex)
    assert futex[0].kernel_stack[0] == "__schedule"
    assert futex[0].user_stack and futex[0].user_stack[0] > 0x7F0000000000
    assert {length for (_, _, _, length) in capture.unsampled} == {0, 1, 2}
    assert all(tgid == MAIN for (tgid, _, _, _) in capture.unsampled)


# main_waits (a main thread waiting on a condition variable while its worker
# computes) under the script that also reads the futex's kind: see
# tests/integration/test_offcpu_wall.py
FUTEX_FIXTURE = FIXTURE.parent / "bpftrace-offcpu-futex.json"


def test_parse_reads_the_futex_kind_of_each_sampled_block():
    capture = bpftrace_stacks.parse(FUTEX_FIXTURE.read_text())
    main = 21557
    waits = [s for s in capture.sampled if s.block_class[1] == main and s.block_class[2] == S]
    assert waits and all("futex_wait" in s.kernel_stack and s.user_stack for s in waits)
    private = sum(s.ns for s in waits if s.futex == 2)  # the condition variable
    shared = sum(s.ns for s in waits if s.futex == 1)  # pthread_join
    assert private > 500_000_000 and 0 < shared < private
    worker = [s for s in capture.sampled if s.block_class[1] != main]
    assert worker and {s.futex for s in worker} == {0}  # preempted, or waking the main thread
    records = [
        r for r in bpftrace_stacks.records(capture) if r.tid == main and r.kernel_state == "S"
    ]
    assert {r.futex for r in records} == {1, 2}
    # the output of the script before it read the futex's kind: not known
    assert {s.futex for s in fixture_capture().sampled} == {0}


def test_records_keep_every_threads_time_per_state_exactly():
    capture = fixture_capture()
    exact: dict[tuple[int, str], float] = defaultdict(float)
    for s in capture.sampled:
        exact[(s.block_class[1], bpftrace_stacks.state_letter(s.block_class[2]))] += s.ns
    for (_, tid, state, _), ns in capture.unsampled.items():
        exact[(tid, bpftrace_stacks.state_letter(state))] += ns
    recorded: dict[tuple[int, str], float] = defaultdict(float)
    for r in bpftrace_stacks.records(capture):
        recorded[(r.tid, r.kernel_state)] += r.ns
        assert r.comm == "prodcons"
    assert recorded.keys() == exact.keys()
    for key, ns in exact.items():
        assert recorded[key] == pytest.approx(ns)


def blocks(length: int, weight: int, user_stack: tuple[int, ...], ns: int) -> SampledBlocks:
    return SampledBlocks((1, 2, S, length), weight, ("__schedule",), user_stack, ns)


def by_stack(capture: Capture) -> dict[tuple[int, ...], float]:
    return {r.user_stack: r.ns for r in bpftrace_stacks.records(capture)}


def test_unsampled_time_goes_to_the_random_draws_in_proportion():
    capture = Capture(
        sampled=[blocks(0, 8, (0xA,), 100), blocks(0, 8, (0xB,), 300), blocks(0, 1, (0xC,), 50)],
        unsampled={(1, 2, S, 0): 4000},
    )
    assert by_stack(capture) == {(0xA,): 1100, (0xB,): 3300, (0xC,): 50}


def test_without_random_draws_the_stacks_always_taken_carry_the_rest():
    capture = Capture(sampled=[blocks(1, 1, (0xC,), 50)], unsampled={(1, 2, S, 1): 150})
    assert by_stack(capture) == {(0xC,): 200}


def test_a_long_block_is_not_spread_over_short_ones_and_keeps_its_time_without_a_stack():
    capture = Capture(
        sampled=[blocks(0, 8, (0xA,), 100)],
        unsampled={(1, 2, S, 0): 700, (1, 2, S, 4): 2_000_000_000},
        names={2: "worker"},
    )
    records = list(bpftrace_stacks.records(capture, {2: "old name", 3: "other"}))
    assert [(r.user_stack, r.ns) for r in records] == [((0xA,), 800), ((), 2_000_000_000)]
    assert records[1].kernel_stack == () and records[1].kernel_state == "S"
    assert all(r.comm == "worker" for r in records)


def test_state_letters_of_sched_switch():
    assert bpftrace_stacks.state_letter(0x100) == "R"
    assert bpftrace_stacks.state_letter(R) == "R"
    assert bpftrace_stacks.state_letter(S) == "S"
    assert bpftrace_stacks.state_letter(2) == "D"


# prodcons 20000 under the script with offcpu mode's on-CPU probe (997 Hz, the user
# address from the registers)
ONCPU_FIXTURE = FIXTURE.parent / "bpftrace-offcpu-oncpu.json"


def test_parse_reads_the_on_cpu_samples_by_thread_and_user_address():
    capture = bpftrace_stacks.parse(ONCPU_FIXTURE.read_text())
    assert capture.oncpu and capture.sampled
    assert all(s.count >= 1 and len(s.user_stack) <= 1 for s in capture.oncpu)
    addresses = [s.user_stack[0] for s in capture.oncpu if s.user_stack]
    assert len(addresses) > len(capture.oncpu) / 2
    assert any(a > 0x7F0000000000 for a in addresses)  # in libc
    assert any(a < 0x7F0000000000 for a in addresses)  # in the program
    assert {s.futex for s in capture.oncpu} <= {0, 1, 2}
    assert len({s.tid for s in capture.oncpu}) == 4  # main and the three consumers
    # the blocked time is what it was: the samples are not blocks
    assert capture.total_ns == sum(s.ns for s in capture.sampled) + sum(capture.unsampled.values())


def test_on_cpu_records_are_worth_their_period_each():
    capture = bpftrace_stacks.parse(ONCPU_FIXTURE.read_text())
    found = list(bpftrace_stacks.oncpu_records(capture, 1e9 / 997))
    assert len(found) == len(capture.oncpu)
    assert all(r.on_cpu and r.kernel_state == "R" and not r.kernel_stack for r in found)
    total = sum(s.count for s in capture.oncpu) * 1e9 / 997
    assert sum(r.ns for r in found) == pytest.approx(total)
    assert not any(r.on_cpu for r in bpftrace_stacks.records(capture))


# the script with the return address at the user stack pointer, on a Rust program whose
# workers spin (sched_yield) and park (futex via libc's syscall) in parking_lot's and
# crossbeam's waits: the frame-pointer walk stops at the libc leaf
RET_FIXTURE = FIXTURE.parent / "bpftrace-offcpu-ret.json"
SCHED_YIELD_SYSCALL = "__x64_sys_sched_yield"


def test_parse_reads_the_return_address_of_a_yield_or_a_futex_wait():
    capture = bpftrace_stacks.parse(RET_FIXTURE.read_text())
    yields = [s for s in capture.sampled if SCHED_YIELD_SYSCALL in s.kernel_stack]
    assert yields and all(s.ret > 0 for s in yields)
    futex = [s for s in capture.sampled if s.futex]
    assert futex and all(s.ret > 0 for s in futex)
    preempted = [
        s for s in capture.sampled if not s.futex and SCHED_YIELD_SYSCALL not in s.kernel_stack
    ]
    assert preempted and {s.ret for s in preempted} == {0}
    records = list(bpftrace_stacks.records(capture))
    assert {r.ret for r in records if SCHED_YIELD_SYSCALL in r.kernel_stack} == {
        s.ret for s in yields
    }
    # the output of scripts before it: no return address
    assert {s.ret for s in fixture_capture().sampled} == {0}


LONG_FIXTURE = FIXTURE.parent / "bpftrace-offcpu-long.json"
# zstd 1.5.4 -q -15 -T4 (built from source) under --mode offcpu: its I/O thread 27615
# blocked often, then idled 1.6 s in one block whose stacks were not drawn
IDLE_IO_THREAD = 27615


def long_threads() -> set[int]:
    """The threads of the entries of @long as bpftrace printed them in the fixture."""
    for line in LONG_FIXTURE.read_text().splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("type") == "map" and "@long" in record["data"]:
            return {int(key.split(",")[1]) for key in record["data"]["@long"]}
    raise AssertionError("no @long map in the fixture")


def test_a_long_block_not_drawn_keeps_its_leaf_futex_kind_and_return_address():
    capture = bpftrace_stacks.parse(LONG_FIXTURE.read_text())
    long_blocks = [s for s in capture.sampled if not s.kernel_stack]
    # one block without a kernel stack for each of bpftrace's own @long entries
    assert {s.block_class[1] for s in long_blocks} == long_threads()
    assert long_threads() == {27597, 27614, IDLE_IO_THREAD}
    idle = next(s for s in long_blocks if s.block_class[1] == IDLE_IO_THREAD)
    assert idle.block_class[3] == 5 and idle.weight == 1
    assert idle.user_stack == (139962178531094,) and idle.futex == 2 and idle.ret == 0


def test_a_long_block_not_drawn_is_a_record_with_its_leaf_not_a_stackless_one():
    """Before @long, the idle thread's long block was a record without stacks: "other"
    99% of the thread where wall mode read condvar."""
    capture = bpftrace_stacks.parse(LONG_FIXTURE.read_text())
    idle = [r for r in bpftrace_stacks.records(capture) if r.tid == IDLE_IO_THREAD]
    block = next(
        s for s in capture.sampled if not s.kernel_stack and s.block_class[1] == IDLE_IO_THREAD
    )
    assert idle and all(r.user_stack for r in idle)  # no stackless record left
    assert any(r.user_stack == block.user_stack and r.futex == 2 for r in idle)
