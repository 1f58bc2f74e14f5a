"""The weight per leaf instruction (model/leaf_costs.py): built from the reader's
(dso, address, leaf function) weights, kept in the store with its run, and shown as
each instruction's share of its function's self samples (views/disassembly.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from asm_binary import HOT_LINE, build, profile

from perfsleuth.model import documents as typed
from perfsleuth.model.leaf_costs import LeafCosts
from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.store import documents
from perfsleuth.store.runs import Store
from perfsleuth.views.disassembly import hot_line_code

WEIGHTS = {
    ("prog", 0x1130, "mix"): 30.0,
    ("prog", 0x1120, "mix"): 10.0,
    ("prog", 0x1140, "work"): 5.0,
    ("libc.so.6", 0x1130, "memcpy"): 7.0,
    ("prog", 0x1150, "mix"): 0.0,
}


def test_the_table_keeps_each_leaf_once_in_address_order() -> None:
    table = LeafCosts.build(WEIGHTS)
    assert len(table) == 4  # the leaf without weight is left out
    assert table.dsos == ["libc.so.6", "prog"] and "memcpy" in table.functions
    assert table.of_function("mix") == {0x1120: 10.0, 0x1130: 30.0}
    assert table.of_function("memcpy") == {0x1130: 7.0}
    assert table.of_function("absent") == {}
    rows = list(zip(table.dso, table.address, strict=True))
    assert rows == sorted(rows)


def test_the_table_survives_its_json() -> None:
    table = LeafCosts.build(WEIGHTS)
    again = documents.decode(LeafCosts.KIND, typed.dump(table))
    assert isinstance(again, LeafCosts) and again == table


def test_the_store_keeps_the_table_with_its_run(tmp_path: Path) -> None:
    run = profile(build(tmp_path))
    run.leaf_costs = LeafCosts.build(WEIGHTS)
    store = Store(tmp_path / "store")
    stored = store.add_run(RunInfo(command="prog"), Recording(run))
    kept = store.documents(stored.id, LeafCosts.KIND)[LeafCosts.NAME]
    assert kept.of_function("mix") == {0x1120: 10.0, 0x1130: 30.0}


def test_each_instruction_has_its_share_of_the_function(asm_program: Path) -> None:
    run = profile(asm_program)
    plain = hot_line_code(run, "mix", run.dsos)
    hot = plain["lines"][0]["instructions"]
    first, last = hot[0]["address"], hot[-1]["address"]
    name = asm_program.name
    costs = LeafCosts.build(
        {(name, first, "mix"): 60.0, (name, last, "mix"): 20.0, (name, 0x1, "mix"): 20.0}
    )
    doc = hot_line_code(run, "mix", run.dsos, costs)
    assert doc["counts"] == "instruction" and doc["no_cost_reason"] is None
    assert doc["lines"][0]["line"] == HOT_LINE
    shares = {i["address"]: i["share"] for i in doc["lines"][0]["instructions"]}
    assert shares[first] == pytest.approx(0.6) and shares[last] == pytest.approx(0.2)
    assert sum(shares.values()) == pytest.approx(0.8)  # 0x1 is no instruction of a hot line


@pytest.mark.parametrize(
    ("meta", "mode", "why"),
    [
        ({"source": "folded"}, "cpu", "read from folded"),
        ({"source": "perf.data", "reader": "perf script"}, "cpu", "perf script"),
        ({"source": "perf.data", "reader": "native"}, "cpu", "stored before"),
        ({}, "count", "counting run"),
        ({"source": "perf.data", "reader": "native"}, "offcpu", "a run in offcpu mode keeps no"),
    ],
)
def test_a_run_without_addresses_says_why(
    asm_program: Path, meta: dict, mode: str, why: str
) -> None:
    run = profile(asm_program)
    run.meta = meta
    doc = hot_line_code(run, "mix", run.dsos, None, mode)
    assert doc["counts"] == "line" and why in doc["no_cost_reason"]
    assert all(i["share"] is None for line in doc["lines"] for i in line["instructions"])
