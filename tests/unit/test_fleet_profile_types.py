"""Profile types in the fleet store: each window's type and unit are columns, queries read
CPU unless asked (`--type`), and files written before the columns read as CPU, before and
after a compaction. Real pyarrow and DuckDB over a store on a folder."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_fleet_store import T0, make_window, stack_pool

from perfsleuth.cli import main
from perfsleuth.errors import UserError
from perfsleuth.fleet import advice, queries, trends
from perfsleuth.fleet.advice import FleetAdvice
from perfsleuth.model.fleet import Window
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.store.fleet import FleetStore

END = T0 + 3600


def alloc_window(i: int, start: float) -> Window:
    b = ProfileBuilder(unit="samples")
    b.add([Frame("make_buffer", dso="app"), Frame("main", dso="app")], 65536 * 3, count=3)
    b.add([Frame("parse", dso="app"), Frame("main", dso="app")], 4096, count=1)
    return Window(
        id=f"alloc-{i}",
        start=start,
        end=start + 10,
        profile=b.build(),
        labels={"host": "h", "service": "api"},
        type="alloc_space",
    )


@pytest.fixture
def store(tmp_path: Path) -> FleetStore:
    s = FleetStore(str(tmp_path / "fleet"))
    pool = stack_pool()
    for i in range(3):
        s.append(make_window(i, T0 + 10 * i, "h", "api", pool))
        s.append(alloc_window(i, T0 + 10 * i))
    return s


def cpu_total(store: FleetStore) -> float:
    return queries.top(store, T0, END, n=0)["total"]


def test_queries_read_cpu_unless_a_type_is_asked(store: FleetStore) -> None:
    cpu = queries.top(store, T0, END, n=0)
    assert (cpu["type"], cpu["unit"]) == ("cpu", "ns")
    assert "make_buffer" not in [r["function"] for r in cpu["rows"]]
    alloc = queries.top(store, T0, END, "type=alloc_space", n=0)
    assert (alloc["type"], alloc["unit"]) == ("alloc_space", "bytes")
    assert alloc["total"] == 3 * (65536 * 3 + 4096)
    assert alloc["rows"][0]["function"] == "make_buffer"
    stored = pq.read_table(store.select(T0, END).samples).to_pydict()
    assert set(zip(stored["type"], stored["unit"], strict=True)) == {
        ("cpu", "ns"),
        ("alloc_space", "bytes"),
    }


def test_the_command_line_takes_type(store: FleetStore, capsys) -> None:
    args = ["fleet", "top", "--store", str(store.root), "--from", str(T0), "--to", str(END)]
    assert main([*args, "--type", "alloc_space", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unit"] == "bytes" and doc["total"] == 3 * (65536 * 3 + 4096)
    with pytest.raises(SystemExit):
        main([*args, "--type", "bananas"])


def test_a_store_written_before_the_type_column_reads_as_cpu(store: FleetStore) -> None:
    before = cpu_total(store)
    for path in store.select(T0, END).samples:
        table = pq.read_table(path)
        if table.column("type")[0].as_py() == "cpu":
            pq.write_table(table.drop_columns(["type", "unit"]), path)  # the old layout
        else:
            Path(path).unlink()
    assert cpu_total(store) == before
    store.append(alloc_window(9, T0 + 100))  # a new window beside the old files
    store.compact()
    assert cpu_total(store) == before
    assert queries.top(store, T0, END, "type=alloc_space", n=0)["total"] == 65536 * 3 + 4096
    # A whole-minute range reads the minute rollup, whose old rows are CPU too.
    assert queries.top(store, T0, T0 + 60, n=0)["total"] == before


def test_advise_reads_cpu_profiles_only(store: FleetStore) -> None:
    with pytest.raises(UserError, match="CPU profiles"):
        advice.advise(store, T0, END, "type=alloc_space", FleetAdvice())


def test_series_and_text_name_the_type_and_unit(store: FleetStore, capsys) -> None:
    doc = trends.series(store, "make_buffer", T0, END, where="type=alloc_space")
    assert (doc["type"], doc["unit"]) == ("alloc_space", "bytes")
    assert sum(p["cpu_ns"] for p in doc["points"]) == 3 * (65536 * 3 + 4096)
    args = ["fleet", "top", "--store", str(store.root), "--from", str(T0), "--to", str(END)]
    assert main([*args, "--by", "service", "--type", "alloc_space"]) == 0
    out = capsys.readouterr().out
    assert "MB" in out and "CPU s" not in out
