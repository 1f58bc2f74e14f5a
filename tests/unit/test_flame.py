"""The flame graph's call tree (views/flame.py), its columns and their binary layout."""

from __future__ import annotations

import json
import struct
from array import array

from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.views.flame import diff_columns, encode, flame_columns


def _profile(extra: float = 0.0):
    b = ProfileBuilder()
    main, a, c, leaf = (Frame(n) for n in ("main", "a", "c", "leaf"))
    b.add([leaf, a, main], 5)
    b.add([a, main], 2)
    b.add([leaf, c, main], 3, state="mutex")
    b.add([c, a, main], 1 + extra)
    b.add([main], 4)
    b.add([], 1)
    return b.build()


def _nested(flame, column="total"):
    """Rebuild {name: (total, children)} from the pre-order columns."""
    values = flame.values[column]
    out: list = []
    stack = [(0, out)]
    for i in range(1, len(flame.name)):
        depth = flame.depth[i]
        del stack[depth:]
        entry = [flame.names[flame.name[i]], values[i], []]
        stack[-1][1].append(entry)
        stack.append((depth, entry[2]))
    return values[0], out


def test_stacks_merge_root_first_with_children_in_name_order() -> None:
    root_total, children = _nested(flame_columns(_profile()))
    assert root_total == 16  # the sample with an empty stack counts at the root only
    leaf_under_a, leaf_under_c = ["leaf", 5, []], ["leaf", 3, []]
    a = ["a", 8, [["c", 1, []], leaf_under_a]]
    assert children == [["main", 15, [a, ["c", 3, [leaf_under_c]]]]]


def test_off_cpu_column_counts_non_running_states() -> None:
    flame = flame_columns(_profile())
    assert list(flame.values) == ["total", "off"]
    _, children = _nested(flame, "off")
    (main,) = children
    assert main[1] == 3  # the mutex sample, under main;c;leaf


def test_diff_columns_keep_each_runs_weights() -> None:
    flame = diff_columns(_profile(), _profile(extra=9))
    _, before = _nested(flame, "a")
    _, after = _nested(flame, "b")
    assert before[0][2][0][2][0][:2] == ["c", 1]  # main;a;c
    assert after[0][2][0][2][0][:2] == ["c", 10]
    assert flame.meta == {"unit": "samples", "total_a": 16, "total_b": 25}


def test_encode_layout() -> None:
    flame = flame_columns(_profile())
    data = encode(flame)
    (header_length,) = struct.unpack_from("<I", data)
    header = json.loads(data[4 : 4 + header_length])
    n = header["nodes"]
    assert header["columns"] == ["total", "off"]
    assert (4 + header_length) % 8 == 0  # the browser views the f64 columns in place
    assert len(data) == 4 + header_length + n * (8 + 8 + 4 + 2)
    names = array("i", data[4 + header_length + 16 * n : 4 + header_length + 20 * n])
    assert list(names) == list(flame.name)


def test_weights_are_exact_as_stored() -> None:
    """A wall run's nanoseconds survive to the wire (float32 made 9,029,117,580 ...952)."""
    b = ProfileBuilder(unit="ns")
    b.add([Frame("leaf"), Frame("main")], 9_029_117_000)
    b.add([Frame("main")], 580)
    data = encode(flame_columns(b.build()))
    (header_length,) = struct.unpack_from("<I", data)
    total = array("d", data[4 + header_length : 4 + header_length + 8 * 3])
    assert list(total) == [9_029_117_580, 9_029_117_580, 9_029_117_000]


def test_a_run_of_several_processes_gets_a_process_level() -> None:
    """`main` of g++ and `main` of cc1plus stay apart, each under its process."""
    from perfsleuth.model.profile import Thread

    b = ProfileBuilder()
    b.add([Frame("spawn"), Frame("main", "g++")], 2, thread=Thread(10, 10, "g++"))
    b.add([Frame("parse"), Frame("main", "cc1plus")], 7, thread=Thread(11, 11, "cc1plus"))
    b.add([Frame("lex"), Frame("main", "cc1plus")], 1, thread=Thread(12, 11, "cc1plus-worker"))
    profile = b.build()
    flame = flame_columns(profile, processes=True)
    total, children = _nested(flame)
    assert total == 10
    assert [(name, value) for name, value, _ in children] == [
        ("g++ (10)_[p]", 2),
        ("cc1plus (11)_[p]", 8),
    ]
    cc1plus = children[1][2]
    assert [(n, v) for n, v, _ in cc1plus] == [("main", 8)]
    # The time order finds each thread's samples under its own process.
    for sid, t in zip(profile.sample_stack, profile.sample_thread, strict=True):
        node = flame.leaf_for(sid, t)
        path = []
        while node > 0:
            path.append(flame.names[flame.name[node]])
            node = next(p for p in range(node - 1, -1, -1) if flame.depth[p] < flame.depth[node])
        assert path[-1].startswith(profile.threads[t].name.split("-")[0])


def test_one_process_has_no_process_level() -> None:
    _, children = _nested(flame_columns(_profile(), processes=True))
    assert not any(name.endswith("_[p]") for name, _, _ in children)
