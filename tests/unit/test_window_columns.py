"""The native parts of a push's way into the head's log against what the Python code
made before them, captured from the same pushes (the SDKs' captured pushes, a simulated
fleet window as the agent pushes it, folded stacks): writer.window_record
(native/src/columns.rs) against the columns and log JSON in
fixtures/fleet_head/window_columns.json.gz, the pprof reader's sample grouping
(native/src/samples.rs) and the folded reader (native/src/folded.rs) against the
windows in fixtures/fleet_head/windows_decoded.json.gz."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import orjson
import pytest
from test_pyroscope import go_push

from perfsleuth.formats.wire import pyroscope, pyroscope_push
from perfsleuth.formats.wire.ingest import IngestParams
from perfsleuth.model.fleet import Window
from perfsleuth.model.profile import Frame
from perfsleuth.store.fleet import wal
from perfsleuth.store.fleet.writer import window_columns, window_record

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECTED = FIXTURES / "fleet_head" / "window_columns.json.gz"
DECODED = FIXTURES / "fleet_head" / "windows_decoded.json.gz"
FLEET_WINDOW = FIXTURES / "fleet_head" / "fleet-sim-window.pprof.gz"
LIMIT = 64 << 20


def _ingest(fixture: str, window_id: str) -> list[Window]:
    head = json.loads((FIXTURES / "pyroscope" / f"{fixture}.json").read_text())
    query = dict(parse_qsl(urlsplit(head["path"]).query))
    body = (FIXTURES / "pyroscope" / f"{fixture}.bin").read_bytes()
    content_type = head.get("content-type") or head.get("content_type", "")
    return pyroscope.decode(body, IngestParams.parse(query, window_id), content_type, LIMIT)


def _connect(fixture: str) -> list[Window]:
    body = gzip.decompress((FIXTURES / "pyroscope" / fixture).read_bytes())
    return pyroscope_push.decode(body, "application/proto", "c", LIMIT)


def _fleet() -> list[Window]:
    """A simulated fleet window (bench/fleet_sim.py) as the agent pushes it: threads,
    processes with exe, build-id and cgroup, labels."""
    query = json.loads(FLEET_WINDOW.with_suffix("").with_suffix(".json").read_text())
    params = IngestParams.parse(query, "fleet")
    return pyroscope.decode(FLEET_WINDOW.read_bytes(), params, "", LIMIT)


def _folded() -> list[Window]:
    query = {"name": "app.cpu{env=prod,zone=é}", "from": "1700000000", "until": "1700000010"}
    params = IngestParams.parse({**query, "format": "folded"}, "folded")
    return pyroscope.decode((FIXTURES / "hot.folded").read_bytes(), params, "", LIMIT)


CASES = {
    "go-cpu": lambda: go_push("cpu"),
    "go-heap": lambda: go_push("heap"),
    "go-mutex": lambda: go_push("mutex"),
    "java-jfr": lambda: _ingest("java-2.9.2-jfr", "java"),
    "node-wall-cpu": lambda: _ingest("node-0.6.4-wall-cpu", "node"),
    "python-connect": lambda: _connect("push-python-1.4.0-threads.bin.gz"),
    "rust-connect": lambda: _connect("push-rust-2.1.5.bin.gz"),
    "fleet-agent": _fleet,
    "folded": _folded,
}


def _tables(columns: dict) -> bytes:
    """The tables' part of a log record as orjson wrote it before (wal.encode)."""
    return orjson.dumps(columns)[1:-1]


@pytest.fixture(scope="module")
def expected() -> dict[str, list[dict]]:
    return json.loads(gzip.decompress(EXPECTED.read_bytes()))


@pytest.mark.parametrize("case", sorted(CASES))
def test_columns_and_log_json_are_those_the_python_code_made(
    case: str, expected: dict[str, list[dict]]
) -> None:
    windows = CASES[case]()
    assert len(windows) == len(expected[case])
    for window, before in zip(windows, expected[case], strict=True):
        for _ in range(2):  # made, then from the caches
            columns, tables = window_record(window)
            assert vars(columns) == before
            assert tables == _tables(before)
        assert orjson.loads(b"{" + tables + b"}") == before


def test_a_log_record_reads_back_as_its_columns() -> None:
    [window] = _fleet()
    columns, tables = window_record(window)
    marker = {"id": window.id, "start": window.start}
    [record] = wal.decode_all(wal.encode(marker, tables))
    assert record.marker == marker
    assert record.columns == columns


def test_frames_equal_but_not_the_same_object_get_the_same_ids() -> None:
    [window] = _fleet()
    profile = window.profile
    copies = [Frame(*(getattr(f, k) for k in Frame.__slots__)) for f in profile.frames]
    again = replace(window, profile=replace(profile, frames=copies))
    assert window_columns(again) == window_columns(window)


def test_text_needing_escapes_is_written_as_json_reads_it() -> None:
    [window] = _folded()
    profile = window.profile
    odd = ['quote " back \\ tab \t nl \n bell \x07 é \u2028 end', "\x1f", ""]
    frames = [replace(f, function=odd[i % 3] + f.function) for i, f in enumerate(profile.frames)]
    labels = {**window.labels, "comm": 'a"b', "note": "x\ny"}
    odd_window = replace(window, profile=replace(profile, frames=frames), labels=labels)
    columns, tables = window_record(odd_window)
    assert tables == _tables(vars(columns))
    assert json.loads(b"{" + tables + b"}") == vars(columns)


def _decoded(window: Window) -> dict:
    """A window as JSON values, all of it the readers make."""
    profile = window.profile
    return {
        "window": [window.id, window.start, window.end, window.labels, window.rate_hz],
        "type": [window.type, profile.unit, profile.meta, profile.dsos],
        "processes": {str(pid): vars(p) for pid, p in window.processes.items()},
        "frames": [[getattr(f, k) for k in Frame.__slots__] for f in profile.frames],
        "stacks": [list(s) for s in profile.stacks],
        "samples": [profile.sample_stack, profile.sample_weight, profile.sample_count],
        "threads": [profile.sample_thread, [[t.tid, t.pid, t.name] for t in profile.threads]],
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_pushes_are_read_into_the_windows_the_python_code_made(case: str) -> None:
    expected = json.loads(gzip.decompress(DECODED.read_bytes()))[case]
    got = json.loads(json.dumps([_decoded(w) for w in CASES[case]()]))
    assert got == expected
