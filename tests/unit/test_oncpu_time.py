"""--mode all: each thread's on-CPU samples scaled to the scheduler's count of its time
on the CPU (collect/oncpu_time.py), a thread perf never sampled given the on-CPU stacks
of the threads of its kind."""

from perfsleuth.collect.offcpu import _merged
from perfsleuth.collect.oncpu_time import NOT_SAMPLED
from perfsleuth.formats.tool_output import bpftrace_stacks
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread

ROOT = [Frame("start_thread", dso="libc.so.6"), Frame("clone3", dso="libc.so.6")]
WORK = [Frame("crunch", dso="app"), Frame("worker", dso="app"), *ROOT]
WAIT = [Frame("futex_wait", kernel=True), Frame("__futex_abstimed_wait_common", dso="libc.so.6")]
SAMPLED, UNSAMPLED, LONE = Thread(11, 10, "pool"), Thread(12, 10, "pool"), Thread(13, 10, "")


def by_thread(profile: Profile) -> dict[tuple[int, str], float]:
    out: dict[tuple[int, str], float] = {}
    for _stack, weight, _count, t, state in profile.rows():
        key = (profile.threads[t].tid, state)
        out[key] = out.get(key, 0.0) + weight
    return out


def test_samples_are_scaled_to_the_time_on_the_cpu_and_unsampled_threads_get_their_kind_s():
    oncpu = ProfileBuilder(unit="ns")
    oncpu.add(WORK, 1e6, count=1, thread=SAMPLED)
    offcpu = ProfileBuilder(unit="ns")
    for thread in (SAMPLED, UNSAMPLED, LONE):
        offcpu.add(WAIT, 2e6, count=1, thread=thread, state="condvar")
    ran = {(10, 11): 1_900_000, (10, 12): 400_000, (10, 14): 300_000}
    merged = _merged(oncpu.build(), offcpu.build(), ran, {14: "other"})
    times = by_thread(merged)
    assert times[(11, "running")] == 1.9e6  # one period sampled, 1.9 run
    assert times[(12, "running")] == 4e5  # no sample: its time, on its name's kind's stacks
    assert times[(11, "condvar")] == times[(12, "condvar")] == 2e6
    assert (13, "running") not in times  # not in ran: nothing known of its time on the CPU
    stacks = {
        merged.threads[t].tid: [merged.frames[f] for f in stack]
        for stack, _w, _c, t, state in merged.rows()
        if state == "running"
    }
    assert stacks[12] == WORK
    assert stacks[14] == [NOT_SAMPLED]  # nothing to go by
    assert merged.threads[[t.tid for t in merged.threads].index(14)].name == "other"


def test_without_the_scheduler_s_count_the_samples_stand():
    oncpu = ProfileBuilder(unit="ns")
    oncpu.add(WORK, 1e6, count=1, thread=SAMPLED)
    merged = _merged(oncpu.build(), ProfileBuilder(unit="ns").build())
    assert by_thread(merged) == {(11, "running"): 1e6}


def test_the_run_times_map_is_read():
    text = '{"type": "map", "data": {"@ran": {"10,11": 1900000, "10,12": 400000}}}\n'
    assert bpftrace_stacks.parse(text).ran == {(10, 11): 1_900_000, (10, 12): 400_000}


def test_a_main_thread_never_sampled_does_not_get_its_workers_stacks():
    """wrapped_locks: the main thread sleeps in nanosleep as the workers do between
    their critical sections; perf never sampled it. Its few ms on the CPU went to a
    worker's lock stacks, and made it a waiter of that worker's lock."""
    main = Thread(10, 10, "app")
    lock = [Frame("__lll_lock_wait", dso="libc.so.6"), Frame("possess_", dso="app"), *WORK]
    nap = [Frame("do_nanosleep", kernel=True), Frame("clock_nanosleep", dso="libc.so.6")]
    oncpu = ProfileBuilder(unit="ns")
    oncpu.add(lock, 1e6, count=1, thread=SAMPLED)
    offcpu = ProfileBuilder(unit="ns")
    offcpu.add(nap, 5e6, count=1, thread=SAMPLED, state="sleep")
    offcpu.add(nap, 3e9, count=1, thread=main, state="sleep")
    offcpu.add(nap, 5e6, count=1, thread=UNSAMPLED, state="sleep")
    ran = {(10, 10): 6_000_000, (10, 11): 1_000_000, (10, 12): 2_000_000}
    merged = _merged(oncpu.build(), offcpu.build(), ran)
    running = {
        merged.threads[t].tid: [merged.frames[f] for f in stack]
        for stack, _w, _c, t, state in merged.rows()
        if merged.threads[t].tid != 11 and state in ("running", "mutex")
    }
    assert running == {10: [NOT_SAMPLED], 12: lock}
