"""--mode all: off-CPU stacks cut short in libc are completed from on-CPU ones."""

from perfsleuth.collect.offcpu import Completions
from perfsleuth.profile import Frame, ProfileBuilder, Thread

LOCK_CALL = Frame("consumer(Queue&)", dso="app", file="/src/queue.cc", line=31)
ROOT = [Frame("start_thread", dso="libc.so.6"), Frame("clone3", dso="libc.so.6")]


def test_all_mode_completes_cut_ebpf_stacks_from_oncpu_stacks():
    oncpu = ProfileBuilder(unit="ns")
    t = Thread(11, 10, "consumer")
    lock_path = [
        Frame("__GI___lll_lock_wait", dso="libc.so.6"),
        Frame("___pthread_mutex_lock", dso="libc.so.6"),
    ]
    oncpu.add([*lock_path, LOCK_CALL, *ROOT], 1, count=3, thread=t)
    oncpu.add([*lock_path, Frame("other_site", dso="app"), *ROOT], 1, count=1, thread=t)
    completions = Completions(oncpu.build())
    cut = [Frame("futex_wait", kernel=True), lock_path[0], Frame("[unknown]", dso="libstdc++.so.6")]
    completed = completions.complete(11, cut)
    assert sorted(share for _, share in completed) == [0.25, 0.75]
    best = max(completed, key=lambda c: c[1])[0]
    assert best[:2] == cut[:2] and LOCK_CALL in best and best[-1].function == "clone3"
    whole = [lock_path[0], LOCK_CALL, *ROOT]
    assert completions.complete(11, whole) == [(whole, 1.0)]
    assert completions.complete(99, cut) == [(cut, 1.0)]  # another thread: nothing to go by
