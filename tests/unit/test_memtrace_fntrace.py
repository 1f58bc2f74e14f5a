"""fntrace's records (captured from the real tool, tests/fixtures/cache/) read back
into calls."""

from pathlib import Path

import pytest

from perfsleuth.collect.fntrace import RECORD, RecordCutter

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cache" / "fntrace-handle_packet.bin"
RETURN_ADDRESS = 0x1094FD  # in main, after its call of handle_packet


def read(max_calls: int, chunk: int = 1 << 20, stop: bool = True) -> RecordCutter:
    cutter = RecordCutter(max_calls, 64, None, stop)
    data = FIXTURE.read_bytes()
    for start in range(0, len(data), chunk):
        if cutter.feed(data[start : start + chunk]):
            break
    return cutter


def test_each_call_has_its_instructions_and_accesses():
    rec = read(max_calls=10).recording
    assert rec.total_calls == len(rec.calls) == 3
    assert [sum(1 for a in call if a[0] == "I") for call in rec.calls] == [16, 16, 16]
    assert (rec.instructions, rec.loads, rec.stores) == (48, 15, 9)
    kinds = [a[0] for a in rec.calls[0] if a[0] != "I"]
    assert kinds == ["L", "L", "L", "S", "L", "S", "S", "L"]  # the ret's load last


def test_data_accesses_carry_the_instruction_that_made_them():
    call = read(max_calls=10).recording.calls[0]
    ret = call[-1]
    assert ret[0] == "L" and ret[3] == call[-2][1]  # the ret's load, made by the ret
    state = call[1]
    assert state[0] == "L" and state[3] == 0x109460 and state[2] == 4  # c->state


@pytest.mark.parametrize("chunk", [1, 7, RECORD.size + 5])
def test_chunks_may_end_inside_a_record(chunk):
    assert read(max_calls=10, chunk=chunk).recording.calls == read(max_calls=10).recording.calls


def test_reports_full_once_max_calls_are_in_and_counts_on_when_told():
    assert read(max_calls=2).full
    rec = read(max_calls=1, stop=False).recording
    assert (len(rec.calls), rec.total_calls, rec.instructions) == (1, 3, 48)


def test_the_call_records_say_where_it_returns():
    data = FIXTURE.read_bytes()
    first = RECORD.unpack_from(data, 0)
    assert first == (RETURN_ADDRESS, 0, ord("C"))


SAMPLED = FIXTURE.with_name("fntrace-sampled.bin")


def read_sampled(max_calls: int, chunk: int = 1 << 20) -> RecordCutter:
    cutter = RecordCutter(max_calls, 64, None, stop_when_full=False)
    data = SAMPLED.read_bytes()
    for start in range(0, len(data), chunk):
        cutter.feed(data[start : start + chunk])
    return cutter


def test_sampled_calls_keep_the_multiples_of_the_last_k_and_count_every_call():
    rec = read_sampled(max_calls=2).recording
    assert rec.sample_every == 4
    assert rec.numbers == [0, 4, 8]
    assert rec.total_calls == 11  # the end record: calls 9 and 10 were not sampled
    assert [sum(1 for a in call if a[0] == "I") for call in rec.calls] == [16, 16, 16]


@pytest.mark.parametrize("chunk", [1, RECORD.size + 5])
def test_sampled_records_read_the_same_in_any_chunks(chunk):
    assert read_sampled(2, chunk).recording.calls == read_sampled(2).recording.calls


def test_a_sampled_run_cut_short_counts_the_calls_up_to_the_last_sampled_one():
    data = SAMPLED.read_bytes()
    cutter = RecordCutter(2, 64, None, stop_when_full=False)
    cutter.feed(data[: -RECORD.size])  # killed before the end record
    assert cutter.recording.total_calls == 9
