"""wallsnap's output (formats/tool_output/wallsnap.py) on a captured real run of
examples/bin/prodcons, and the snapshots wall mode makes of it."""

from pathlib import Path

from perfsleuth.collect.wall import from_wallsnap
from perfsleuth.formats.tool_output import wallsnap

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu" / "wallsnap-prodcons.txt"


def test_snapshots_carry_their_instant_hold_and_every_thread():
    snaps = wallsnap.parse(FIXTURE.read_text())
    assert [(s.time_ns, s.held_ns) for s in snaps] == [
        (58161316524423, 47611903),
        (58161364448008, 75613702),
    ]
    for snap in snaps:
        assert sorted(t.tid for t in snap.threads) == [10286, 10287, 10289, 10290]
        assert all(t.pid == 10286 for t in snap.threads)
        assert set(snap.states) == {t.tid for t in snap.threads}


def test_states_say_whether_a_thread_was_blocked_in_a_system_call():
    first = wallsnap.parse(FIXTURE.read_text())[0]
    producer = first.states[10286]  # main, joining the consumers: blocked in futex
    assert (producer.state, producer.syscall, producer.name) == ("S", 202, "prodcons")
    assert (first.states[10289].state, first.states[10289].syscall) == ("R", None)


def test_frames_keep_module_build_id_and_offset():
    first = wallsnap.parse(FIXTURE.read_text())[0]
    consumer = next(t for t in first.threads if t.tid == 10289)
    leaf = consumer.frames[0]
    assert leaf.module == "/work/wt/wallstop/examples/bin/prodcons"
    assert leaf.build_id == "bf1e6a607a4e0e321efc2ecb9f63c955b07e1450"
    assert (leaf.address, leaf.offset) == (0x5652543BA697, 0x2697)
    assert consumer.frames[-1].module.endswith("libc.so.6")


def test_a_name_with_spaces_and_text_before_the_first_snapshot():
    text = "noise\nSNAPSHOT 10 2\nSTATE 7 R - my worker 1\nPID 7 - process\nTID 7:\n"
    (snap,) = wallsnap.parse(text)
    assert snap.states[7].name == "my worker 1"
    assert [t.tid for t in snap.threads] == [7]


def test_no_snapshot_at_all():
    assert wallsnap.parse("") == []
    assert from_wallsnap("wallsnap wrote nothing\n", rate_hz=50) == []


def test_each_snapshot_weighs_the_time_since_the_one_before():
    snaps = from_wallsnap(FIXTURE.read_text(), rate_hz=20)
    assert [s.weight_ns for s in snaps] == [50e6, 58161364448008 - 58161316524423]
    assert all(s.one_instant for s in snaps)
    assert snaps[0].tasks[10286].state == "S" and snaps[0].tasks[10286].name == "prodcons"
