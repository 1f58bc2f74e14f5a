from perfsleuth.model.profile import Frame, ProfileBuilder, Thread, merge

MAIN = Frame("main", "prog", "prog.c", 10)
A = Frame("a", "prog", "prog.c", 20)
INL = Frame("helper", "prog", "prog.h", 3, inlined=True)


def build():
    b = ProfileBuilder(unit="ns")
    b.add([A, MAIN], 10, thread=Thread(1, 1, "main"), state="running")
    b.add([A, MAIN], 5, thread=Thread(1, 1, "main"), state="running")
    b.add([INL, A, MAIN], 3, thread=Thread(2, 1, "worker"), state="mutex")
    return b.build()


def test_builder_aggregates_identical_rows():
    p = build()
    assert len(p.sample_stack) == 2
    assert p.total == 18
    assert p.num_samples == 3
    assert len(p.frames) == 3
    assert [p.frames[f].function for f in p.stacks[1]] == ["helper", "a", "main"]


def test_filter_by_state_and_thread():
    p = build()
    assert p.filtered(states=["mutex"]).total == 3
    assert p.filtered(tids=[1]).total == 15
    assert p.filtered(states=["running"], tids=[2]).total == 0


def test_without_inlines_moves_self_to_physical_function():
    p = build().without_inlines()
    leaves = {p.frames[p.stacks[s][0]].function for s in p.sample_stack}
    assert leaves == {"a"}
    assert p.total == 18


def test_merge_adds_weights():
    m = merge([build(), build()])
    assert m.total == 36
    assert m.num_samples == 6
