"""The counts document (model, codec, store) and the gate's comparison, on a
callgrind.out captured from a real program (tests/fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.commands import gate
from perfsleuth.errors import UserError
from perfsleuth.formats import callgrind
from perfsleuth.formats.counts import encode_counts, parse_counts
from perfsleuth.model.counts import Counts
from perfsleuth.model.profile import Profile
from perfsleuth.model.run import Recording, RunInfo, StoredDocument
from perfsleuth.store.counts import find_counts, require_counts
from perfsleuth.store.runs import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CALLGRIND_OUT = FIXTURES / "callgrind.out.hot"


@pytest.fixture(scope="module")
def data() -> callgrind.CallgrindData:
    return callgrind.parse(CALLGRIND_OUT)


def test_count_document_round_trips_the_file_exactly(tmp_path: Path) -> None:
    doc = encode_counts(CALLGRIND_OUT)
    assert doc.callgrind_out == CALLGRIND_OUT.read_bytes()
    assert doc.to_json()["size"] == CALLGRIND_OUT.stat().st_size
    assert parse_counts(doc).totals == callgrind.parse(CALLGRIND_OUT).totals


def test_function_and_line_counts_add_up_to_the_total(data: callgrind.CallgrindData) -> None:
    total = data.total()
    assert sum(data.function_self().values()) == total
    assert sum(data.line_self().values()) == total


def test_gate_compares_totals_against_the_threshold() -> None:
    base = {"run": "1", "event": "Ir", "total": 1000, "build_id": "ab", "functions": {"f": 600}}
    grown = {"total": 1006, "build_id": "ab", "functions": {"f": 606}}
    assert not gate.compare(base, grown, 0.005, 10)["passed"]
    assert gate.compare(base, grown, 0.01, 10)["passed"]
    assert gate.compare(base, grown, 0.01, 10)["changes"] == [
        {"function": "f", "a": 600, "b": 606, "delta": 6}
    ]


def test_gate_reads_percentages() -> None:
    assert gate.parse_percent("0.5%") == pytest.approx(0.005)
    assert gate.parse_percent("2") == pytest.approx(0.02)
    with pytest.raises(UserError):
        gate.parse_percent("-1%")


def test_unnamed_code_is_merged_per_object_for_comparisons() -> None:
    data = callgrind.CallgrindData(
        events=["Ir"],
        self_costs={("/bin/k", "0x1250"): {("", 0): [3]}, ("/bin/k", "0x12a0"): {("", 0): [4]}},
        totals=[7],
    )
    assert data.function_self() == {"0x1250": 3, "0x12a0": 4}
    assert data.function_self(merge_unnamed=True) == {"[unnamed code in k]": 7}


def stored(tmp_path: Path, document: object) -> Store:
    store = Store(tmp_path)
    recording = Recording(Profile(), documents=[StoredDocument(Counts.KIND, Counts.NAME, document)])
    store.add_run(RunInfo(mode="count"), recording)
    return store


def test_the_store_reads_counts_back_typed_and_current(tmp_path: Path) -> None:
    counts = Counts(CALLGRIND_OUT.read_bytes(), {"hot.c": ["int main() {", "}"]})
    store = stored(tmp_path, counts)
    assert find_counts(store, 1) == counts
    assert store.documents(1, Counts.KIND) == {Counts.NAME: counts}


def test_counts_recorded_before_sources_were_kept_are_upgraded_on_load(tmp_path: Path) -> None:
    old = Counts(CALLGRIND_OUT.read_bytes()).to_json()
    del old["sources"]
    counts = require_counts(stored(tmp_path, old), 1)
    assert counts.sources == {}
    assert counts.callgrind_out == CALLGRIND_OUT.read_bytes()


def test_a_run_without_counts_says_how_to_record_them(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.add_run(RunInfo(), Recording(Profile()))
    assert find_counts(store, 1) is None
    with pytest.raises(UserError, match="record --mode count"):
        require_counts(store, 1)


def test_a_counts_document_newer_than_this_perfsleuth_is_refused(tmp_path: Path) -> None:
    newer = {**Counts(b"").to_json(), "version": Counts.VERSION + 1}
    with pytest.raises(UserError, match="upgrade perfsleuth"):
        find_counts(stored(tmp_path, newer), 1)
