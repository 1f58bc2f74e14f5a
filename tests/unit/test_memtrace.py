"""The extent cutter on captured lackey output (tests/fixtures/cache/)."""

from pathlib import Path

import pytest

from perfsleuth.collect.memtrace import VALGRIND_PIE_BASE, ExtentCutter, Target

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cache" / "lackey-handle_packet.txt"
HANDLE_PACKET = 0x15D0


def cut(max_calls: int, lines_per_block: int = 1000, stop: bool = True) -> ExtentCutter:
    target = Target("conntable", "handle_packet", HANDLE_PACKET, VALGRIND_PIE_BASE)
    cutter = ExtentCutter(target, max_calls, 64, None, stop_when_full=stop)
    lines = FIXTURE.read_text().splitlines(keepends=True)
    for start in range(0, len(lines), lines_per_block):
        if cutter.feed_block("".join(lines[start : start + lines_per_block])):
            break
    return cutter


def test_each_call_is_cut_at_its_return_address():
    rec = cut(max_calls=10).recording
    assert rec.total_calls == 3
    assert [sum(1 for a in call if a[0] == "I") for call in rec.calls] == [10, 10, 10]
    assert rec.instructions == 30


def test_loads_and_stores_follow_lackey_kinds():
    rec = cut(max_calls=10).recording
    kinds = [a[0] for a in rec.calls[0] if a[0] != "I"]
    assert kinds == ["L", "L", "M", "S", "S", "L"]  # the ret's load of its return address last
    assert (rec.loads, rec.stores) == (12, 9)


def test_data_accesses_carry_the_instruction_that_made_them():
    call = cut(max_calls=10).recording.calls[0]
    store = next(a for a in call if a[0] == "S")
    assert store[3] == VALGRIND_PIE_BASE + 0x15E0  # mov %rsi,0x108(%rdi): last_ack
    assert store[1] - 0x108 == call[1][1]  # 0x108 past the struct's first field, state


@pytest.mark.parametrize("lines_per_block", [1, 7, 40])
def test_blocks_may_end_anywhere_between_lines(lines_per_block):
    whole = cut(max_calls=10).recording
    assert cut(max_calls=10, lines_per_block=lines_per_block).recording.calls == whole.calls


def test_reports_full_once_max_calls_are_in():
    cutter = cut(max_calls=2)
    assert cutter.full
    assert len(cutter.recording.calls) == 2


def test_run_to_end_keeps_counting_past_max_calls():
    rec = cut(max_calls=1, stop=False).recording
    assert (len(rec.calls), rec.total_calls, rec.instructions) == (1, 3, 30)


def test_lines_are_counted_once():
    rec = cut(max_calls=10).recording
    assert len(rec.code_lines) == 1  # handle_packet's 37 bytes sit in one line
    assert len(rec.data_lines) == len({a[1] >> 6 for c in rec.calls for a in c if a[0] != "I"})
