"""Parsers of captured real output: eu-stack -b -q -m and perf's switch events."""

from pathlib import Path

from perfsleuth.formats.tool_output import eu_stack, perf_switches

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu"


def test_eu_stack_threads_frames_and_module_offsets():
    threads = eu_stack.parse((FIXTURES / "eu-stack-prodcons.txt").read_text())
    assert [t.tid for t in threads] == [25687, 25688, 25689, 25690]
    assert all(t.pid == 25687 for t in threads)
    leaf = threads[0].frames[0]
    assert leaf.address == 0x5571EE28285D
    assert leaf.module == "/tmp/pcfp"
    assert leaf.build_id == "c47e22f14ce6f8484d104e22c5e3cd5d939c31ac"
    assert leaf.offset == 0x285D
    # return addresses come back one byte, into the call instruction
    assert threads[0].frames[1].offset == 0x2998
    assert threads[0].frames[3].module.endswith("libc.so.6")


def test_eu_stack_frame_without_module_line_keeps_its_address():
    text = "PID 7 - process\nTID 7:\n#0  0x00007ffd1234 - [vdso]\n#1  0x0000000000401000\n"
    (thread,) = eu_stack.parse(text)
    assert [f.address for f in thread.frames] == [0x7FFD1234, 0x401000]
    assert thread.frames[0].module == "[vdso]"
    assert thread.frames[1].offset is None


def test_perf_switches_pair_switch_outs_with_switch_ins():
    with open(FIXTURES / "perf-switches.txt") as fh:
        switches = list(perf_switches.parse(fh))
    assert len(switches) == 13
    lock_wait = switches[1]
    assert (lock_wait.pid, lock_wait.tid, lock_wait.kernel_state) == (9294, 9294, "S")
    assert lock_wait.ns == 49000  # 4838.874980 out, 4838.875029 back in
    names = [f.function for f in lock_wait.frames]
    assert names[0] == "__schedule" and lock_wait.frames[0].kernel
    assert names.index("__GI___lll_lock_wait") < names.index("main")
    by_name = {f.function: f for f in lock_wait.frames}
    assert by_name["___pthread_mutex_lock"].dso == "libc.so.6"
    assert by_name["std::mutex::lock"].inlined and by_name["producer"].dso == "prodcons"
    assert {s.kernel_state for s in switches} == {"R", "S"}
