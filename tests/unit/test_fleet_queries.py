"""Fleet queries beyond top: --by library|service|host, diff, series, libraries; and the
same through the command line. Real pyarrow and DuckDB over a store on a folder."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest
from test_fleet_store import T0, as_ns, fleet, make_window, stack_pool

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from fleet_sim import windows as sim_windows  # noqa: E402

from perfsleuth.analyzers import Context
from perfsleuth.cli import main
from perfsleuth.errors import UserError
from perfsleuth.fleet import advice, engine, libraries, queries, trends
from perfsleuth.fleet.labels import LabelWeights
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread, merge
from perfsleuth.model.run import RunInfo
from perfsleuth.store.fleet import FleetStore
from perfsleuth.symbols import build_id_of
from perfsleuth.views.diff import diff
from perfsleuth.views.top import top

END = T0 + 7200


@pytest.fixture
def windows():
    return fleet(6, 3)


@pytest.fixture
def store(tmp_path: Path, windows) -> FleetStore:
    s = FleetStore(str(tmp_path / "fleet"))
    for w in windows:
        s.append(w)
    return s


def test_top_by_service_and_host_are_each_ones_cpu_share(store, windows) -> None:
    total = sum(as_ns(w).total for w in windows)
    for label in ("service", "host"):
        doc = queries.top(store, T0, END, by=label, n=0)
        expected: dict[str, float] = {}
        for w in windows:
            expected[w.labels[label]] = expected.get(w.labels[label], 0) + as_ns(w).total
        assert {r[label]: r["self"] for r in doc["rows"]} == pytest.approx(
            {k: v / total for k, v in expected.items()}
        )
        assert doc["total"] == total and doc["by"] == label


def test_top_by_any_label_names_it_and_gives_each_values_cpu_share(store, windows) -> None:
    total = sum(as_ns(w).total for w in windows)
    expected: dict[str, float] = {}
    for w in windows:
        expected[w.labels["version"]] = expected.get(w.labels["version"], 0) + as_ns(w).total
    doc = queries.top(store, T0, END, by="label:version", n=0)
    assert doc["by"] == "label:version" and doc["label"] == "version"
    assert {r["version"]: r["self"] for r in doc["rows"]} == pytest.approx(
        {k: v / total for k, v in expected.items()}
    )
    assert queries.top(store, T0, END, by="host", n=0)["label"] == "host"
    assert "label" not in queries.top(store, T0, END, by="function", n=1)


def test_per_host_tops_sum_to_the_fleet_top(store, windows) -> None:
    fleet_cpu = queries.top(store, T0, END, n=0)["total"]
    per_host = [
        queries.top(store, T0, END, where=f"host={h}", n=0)["total"]
        for h in ("web-0", "web-1", "web-2")
    ]
    assert sum(per_host) == fleet_cpu


def test_top_by_library_merges_versions(tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    lib = "/usr/lib/libz.so.1.2.13"
    pool = [[replace(f, dso=lib) if f.dso == "libz.so.1" else f for f in s] for s in stack_pool()]
    store.append(make_window(0, T0, "a", "api", stack_pool()))
    store.append(make_window(1, T0 + 10, "b", "api", pool))
    rows = queries.top(store, T0, END, by="library", n=0)["rows"]
    names = [r["dso"] for r in rows]
    assert "libz" in names and "libc" in names and not any(".so" in n for n in names)


def test_diff_of_label_sets_is_views_diff_of_each_side(store, windows) -> None:
    a = trends.Side(T0, END, "version=1.0")
    b = trends.Side(T0, END, "version=1.2")
    doc = trends.diff(store, a, b, n=0)
    side_a = merge([as_ns(w) for w in windows if w.labels["version"] == "1.0"])
    side_b = merge([as_ns(w) for w in windows if w.labels["version"] == "1.2"])
    assert doc["rows"] == diff(side_a, side_b, n=0)["rows"]
    assert doc["a"] == {"from": T0, "to": END, "where": "version=1.0"}


def test_diff_with_an_empty_side_says_which(store) -> None:
    with pytest.raises(UserError, match="side B has no samples where version=9"):
        trends.diff(store, trends.Side(T0, END), trends.Side(T0, END, "version=9"))


def test_series_buckets_add_up_to_the_range(store, windows) -> None:
    doc = trends.series(store, "malloc", T0, T0 + 60, step=20)
    assert [p["from"] for p in doc["points"]] == [T0, T0 + 20, T0 + 40]
    assert sum(p["cpu_ns"] for p in doc["points"]) == sum(as_ns(w).total for w in windows)
    whole = top(merge([as_ns(w) for w in windows]), n=0)["rows"]
    malloc = next(r for r in whole if r["function"] == "malloc")
    weighted = sum(p["total"] * p["cpu_ns"] for p in doc["points"])
    assert weighted / sum(p["cpu_ns"] for p in doc["points"]) == pytest.approx(malloc["total"])
    with pytest.raises(UserError, match="no samples of 'nope'"):
        trends.series(store, "nope", T0, T0 + 60)


def test_series_of_compacted_hours_reads_each_bucket_at_its_own_grain(tmp_path: Path) -> None:
    """Windows over two hours, compacted (hour and minute rollups): every bucket of a
    1-minute, 90-second and 1-hour series holds what a query of that bucket alone holds."""
    store = FleetStore(str(tmp_path / "fleet"))
    for w in fleet(n_per_host=24, hosts=2, spacing=300):
        store.append(w)
    store.compact()
    for step in (60, 90, 3600):
        doc = trends.series(store, "malloc", T0, END, step=step)
        assert len(doc["points"]) == math.ceil(7200 / step)
        for point in doc["points"][:: max(1, len(doc["points"]) // 12)]:
            alone = queries.profile(store, point["from"], point["to"])
            assert (point["cpu_ns"], point["samples"]) == (alone.total, alone.num_samples)


def test_series_buckets_are_bounded_and_a_week_of_minutes_fits(store, windows) -> None:
    week = trends.series(store, "malloc", END - 7 * 86400 - 30, END - 30, step=60)
    assert len(week["points"]) == 10_081
    assert sum(p["cpu_ns"] for p in week["points"]) == sum(as_ns(w).total for w in windows)
    year = (T0 - 365 * 86400, T0 + 10 * 86400)
    with pytest.raises(UserError, match=r"32,400,000 buckets .* at most 20,000: use --step 28m"):
        trends.series(store, "malloc", *year, step=1)
    assert len(trends.series(store, "malloc", *year, step=28 * 60)["points"]) <= 20_000
    with pytest.raises(UserError, match="at least 1s"):
        trends.series(store, "malloc", T0, END, step=0.5)


def test_a_query_past_its_frames_says_so(store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A range whose distinct stacks hold more frames than a query reads is refused
    before they reach Python (a store written before pushes were bounded can hold one
    stack of 60,000,000 frames)."""
    frames = sum(len(s) for s in queries.profile(store, T0, END).stacks)
    monkeypatch.setattr(engine, "MAX_QUERY_FRAMES", frames - 1)
    with pytest.raises(UserError, match=rf"hold {frames:,} frames in all, more than the"):
        queries.top(store, T0, END)
    monkeypatch.setattr(engine, "MAX_QUERY_FRAMES", frames)
    assert queries.top(store, T0, END)["rows"]


def test_sums_past_64_bits_are_one_line(tmp_path: Path) -> None:
    """Three rows of 2**62 ns (a store written without the collector's bounds): the
    label and bucket sums pass BIGINT, which is said in one line."""
    builder = ProfileBuilder(unit="ns")
    for pid in (1, 2, 3):
        builder.add([Frame("f")], float(1 << 62), thread=Thread(tid=pid, pid=pid))
    store = FleetStore(str(tmp_path / "fleet"))
    store.append(Window("huge", T0, T0 + 10, builder.build(), {"service": "x"}))
    for query in (
        lambda: queries.top(store, T0, END, by="service"),
        lambda: trends.series(store, "f", T0, END),
    ):
        with pytest.raises(UserError, match=r"sum past 2\*\*63 .*: narrow --from/--to"):
            query()


def test_a_regex_re2_refuses_is_one_line_naming_re2(store) -> None:
    with pytest.raises(UserError, match=r"\(RE2\) refuses it .* backreferences"):
        queries.top(store, T0, END, where=r"service=~(a)\1")


def test_bucket_step_is_whole_minutes_or_hours() -> None:
    assert trends.bucket_step(0, 3600) == 180
    assert trends.bucket_step(0, 7 * 86400) == 7 * 3600


def test_libraries_lists_replaceable_ones_where_loaded_and_if_hot(tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    libs = ("/usr/lib/x86_64-linux-gnu/libz.so.1.2.13", "/usr/lib/x86_64-linux-gnu/libm.so.6")
    for i, host in enumerate(("a", "b")):
        w = make_window(i, T0 + i, host, "api", stack_pool())
        w.processes[100] = Process("/usr/bin/app", "b100", libraries=libs)
        store.append(w)
    doc = libraries.libraries(store, T0, END)
    assert doc["windows"] == 2
    [row] = doc["libraries"]
    assert row["rule"] == "compression.zlib" and row["library"] == libs[0]
    assert row["hosts"] == ["a", "b"] and row["programs"] == ["/usr/bin/app"]
    assert row["hot"] == (row["share"] >= 0.02) and row["share"] > 0
    valid(doc, "FleetLibrariesDoc")


def valid(doc: object, name: str) -> None:
    """DOC follows its type in views/documents.py, through the generated JSON Schema."""
    schema = json.loads(
        (Path(__file__).parents[2] / "docs/schemas/documents.schema.json").read_text()
    )
    jsonschema.validate(json.loads(json.dumps(doc)), {**schema, "$ref": f"#/$defs/{name}"})


def test_fleet_flame_json_follows_the_schema(store, windows) -> None:
    profile = queries.flame(store, T0, END, None)
    doc = queries.flame_json(profile, T0, END, None)
    assert doc["stacks"] and doc["total"] == sum(s["cpu_ns"] for s in doc["stacks"])
    valid(doc, "FleetFlameDoc")


def test_libraries_match_the_library_not_a_file_name(tmp_path: Path) -> None:
    """pyarrow's _json extension is not Python's json module, whose file is the same name."""
    store = FleetStore(str(tmp_path / "fleet"))
    so = "_json.cpython-311-x86_64-linux-gnu.so"
    stdlib, pyarrow = f"/usr/lib/python3.11/lib-dynload/{so}", f"/venv/site-packages/pyarrow/{so}"
    w = make_window(0, T0, "a", "api", stack_pool())
    w.processes[100] = Process("/usr/bin/python3", "b100", libraries=(stdlib, pyarrow))
    store.append(w)
    rows = libraries.libraries(store, T0, END)["libraries"]
    assert [(r["rule"], r["library"]) for r in rows] == [("python.json", stdlib)]


def test_libraries_where_narrows_the_hosts_services_and_programs_listed(tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    zlib = ("/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",)
    for i, (host, service, version) in enumerate((("a", "api", "1.0"), ("b", "db", "1.1"))):
        w = make_window(i, T0 + i, host, service, stack_pool(), version=version)
        w.processes[100] = Process("/usr/bin/app", "b100", libraries=zlib)
        w.processes[200] = Process("/usr/bin/other", "b200", libraries=zlib)
        store.append(w)

    def listed(where: str) -> tuple[int, list[tuple[list[str], list[str], list[str]]]]:
        doc = libraries.libraries(store, T0, END, where)
        rows = [(r["hosts"], r["services"], r["programs"]) for r in doc["libraries"]]
        return doc["windows"], rows

    both = ["/usr/bin/app", "/usr/bin/other"]
    assert listed("") == (2, [(["a", "b"], ["api", "db"], both)])
    assert listed("service=api") == (1, [(["a"], ["api"], both)])
    assert listed("host!~a,version=1.1") == (1, [(["b"], ["db"], both)])
    assert listed("exe=/usr/bin/app") == (2, [(["a", "b"], ["api", "db"], ["/usr/bin/app"])])
    assert listed("pid=100") == (2, [(["a", "b"], ["api", "db"], both)])  # per sample: share only
    assert listed("service=web") == (0, [])


def test_fleet_top_is_the_sum_of_per_host_tops_on_simulator_data(tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    made = list(sim_windows(hosts=6, services=3, count=2, start=T0))
    for w in made:
        store.append(w)

    def top_of(where: str | None) -> tuple[float, dict[tuple[str, str], float]]:
        """The total and each function's absolute self CPU ns, from fleet top's rows."""
        doc = queries.top(store, T0, END, where, "function", 0, "self")
        return doc["total"], {
            (r["function"], r["dso"]): r["self"] * doc["total"] for r in doc["rows"]
        }

    total, fleet_self = top_of(None)
    summed: Counter[tuple[str, str]] = Counter()
    hosts = sorted({w.labels["host"] for w in made})
    host_totals = []
    for host in hosts:
        host_total, host_self = top_of(f"host={host}")
        host_totals.append(host_total)
        summed.update(host_self)
    assert len(hosts) == 6 and sum(host_totals) == total
    assert summed.keys() == fleet_self.keys() and len(fleet_self) > 100
    for key, ns in fleet_self.items():
        assert summed[key] == pytest.approx(ns, rel=1e-12), key


def test_fleet_query_verbs_through_the_cli(store, capsys) -> None:
    span = ["--store", store.root, "--from", str(T0), "--to", str(END)]
    assert main(["fleet", "top", *span, "--by", "service", "--format", "json"]) == 0
    assert {r["service"] for r in json.loads(capsys.readouterr().out)["rows"]} == {"api", "db"}
    assert (
        main(
            ["fleet", "diff", *span, "--a", "version=1.0", "--b", "version=1.1", "--format", "json"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["b"]["where"] == "version=1.1"
    ranges = ["--a", f"{T0 - 60}..{T0}", "--b", f"{T0}..{T0 + 60}"]
    assert main(["fleet", "diff", "--store", store.root, *ranges]) == 2
    assert "side A has no samples" in capsys.readouterr().err
    assert main(["fleet", "series", "free", *span, "--step", "1h", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["points"]) == 2
    assert main(["fleet", "top", *span, "--by", "label:version"]) == 0
    assert "by version" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["fleet", "top", *span, "--by", "label:"])
    assert "or label:NAME for any label" in capsys.readouterr().err
    for verb in (["top", "--by", "host"], ["series", "free"], ["advise"], ["libraries"]):
        assert main(["fleet", verb[0], *verb[1:], *span]) == 0, verb
    capsys.readouterr()
    assert main(["fleet", "advise", *span, "--rules", "missing.toml"]) == 2
    assert "--rules missing.toml: no such file" in capsys.readouterr().err


O0_BUILD = Path(__file__).resolve().parents[2] / "examples" / "bin" / "o0_build"


def _deep(build_id: str) -> tuple[list, list[str]]:
    """advice.deep_findings on a fleet whose one hot program is o0_build with `build_id`."""
    builder = ProfileBuilder(unit="ns")
    builder.add([Frame("main", dso="o0_build")], 1e9)
    ctx = Context(profile=builder.build(), run=RunInfo(source="fleet"))
    row = {"service": "s", "host": "h", "exe": str(O0_BUILD), "build_id": build_id}
    table = pa.table({**{k: [v] for k, v in row.items()}, "stack_id": [1], "samples": [19]})
    who = LabelWeights(advice.WHO, table.append_column("cpu_ns", pa.array([10**9])))
    return advice.deep_findings(ctx, who, 3), ctx.notes


def test_build_flags_run_on_the_binary_with_the_fleets_build_id() -> None:
    found, notes = _deep(build_id_of(str(O0_BUILD)))
    assert [f.kind for f in found] == ["build-flags"] and notes == []
    assert found[0].dso == "o0_build"


def test_build_flags_never_run_on_a_local_file_with_another_build_id() -> None:
    found, notes = _deep("00" * 20)
    assert found == []
    assert notes == [
        f"build flags not checked for {O0_BUILD} (build-id {'00' * 8}): "
        "no binary with that build-id on this machine"
    ]


def test_an_object_deleted_during_the_scan_makes_the_query_select_again():
    """A compaction deleted a Parquet object between the selection and DuckDB's GetObject
    (a clean-clone CI run on SeaweedFS): the error, as DuckDB worded it, is the
    FileNotFoundError that makes the query select again, not a traceback."""
    said = (
        "Invalid Input Error: reading the stream registered as 'samples_files' failed: "
        "IOError: AWS Error NO_SUCH_KEY during GetObject operation: The specified key does "
        "not exist. (Request ID: 18EEBFF6D7EF6F1ADB0DABC0)"
    )

    @engine.files_may_go
    def scan() -> None:
        raise engine.duckdb.InvalidInputException(said)

    with pytest.raises(FileNotFoundError, match="NO_SUCH_KEY"):
        scan()
