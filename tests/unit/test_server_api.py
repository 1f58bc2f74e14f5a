"""The web API without HTTP: shapes, validation errors, and the source view's safety."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from uistore import ENGINE, HOSTILE, make_store

from perfsleuth.cli import main
from perfsleuth.experiments.stats import MIN_PAIRS_FOR_CLAIM
from perfsleuth.model.findings import Finding
from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.server.api import Api


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Api:
    store, _sources = make_store(tmp_path_factory.mktemp("api"))
    return Api(store, [])


def get(api: Api, path: str, **params: str | list[str]) -> tuple[int, object]:
    query = {k: v if isinstance(v, list) else [v] for k, v in params.items()}
    response = api.get(path, query)
    assert response.content_type.startswith("application/json")
    return response.status, json.loads(response.body)


def test_runs_list_newest_first_with_top_finding(api: Api) -> None:
    status, runs = get(api, "/api/runs")
    assert status == 200
    assert [r["id"] for r in runs] == ["2", "1"]
    assert runs[0]["top_finding"]["title"] == "12% of CPU time is in glibc malloc/free"
    assert runs[1]["top_finding"] is None


def test_run_overview_lists_threads_and_states(api: Api) -> None:
    status, run = get(api, "/api/runs/latest")
    assert status == 200
    assert run["id"] == "2"
    assert [t["tid"] for t in run["threads"]] == [200, 201]
    assert run["states"] == ["mutex", "running"]
    assert run["findings"] == 2


def test_top_by_line_and_filtered_by_state(api: Api) -> None:
    _, doc = get(api, "/api/runs/2/top", by="line")
    assert doc["rows"][0]["function"] == "compute_hot"
    assert doc["rows"][0]["line"] == 13
    _, off = get(api, "/api/runs/2/top", state="mutex")
    assert [r["function"] for r in off["rows"] if r["self"]] == ["futex_wait"]


def test_threads_is_the_cli_document(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = get(api, "/api/runs/2/threads")
    main(["threads", "2", "--store", str(api.store.root), "--format", "json"])
    assert doc == json.loads(capsys.readouterr().out)
    assert [t["tid"] for t in doc["threads"]] == [200, 201]
    worker1 = doc["threads"][1]
    assert worker1["total"] == 425
    assert worker1["states"] == {"running": 275 / 425, "mutex": 150 / 425}


def test_the_cli_annotate_is_a_window_of_the_api_document(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    """One annotate document: the UI's has each file whole, the CLI prints the function's
    lines of it with 3 around, every key and shown line the same."""
    _, doc = get(api, "/api/runs/2/annotate", function="compute_hot")
    main(["annotate", "^compute_hot$", "2", "--store", str(api.store.root), "--format", "json"])
    (printed,) = json.loads(capsys.readouterr().out)["files"]
    (whole,) = doc["files"]
    assert printed["function"] == "compute_hot"
    assert {k: v for k, v in printed.items() if k not in ("function", "lines")} == {
        k: v for k, v in whole.items() if k != "lines"
    }
    rows = {row["line"]: row for row in whole["lines"]}
    assert all(rows[row["line"]] == row for row in printed["lines"])
    costed = [row["line"] for row in whole["lines"] if row["self"] or row["total"]]
    shown = [row["line"] for row in printed["lines"]]
    assert shown == list(range(max(1, min(costed) - 3), min(len(rows), max(costed) + 3) + 1))
    assert len(shown) < len(rows)


def test_findings_say_whether_advise_ran(api: Api) -> None:
    assert get(api, "/api/runs/2/findings")[1]["advised"] is True
    none = get(api, "/api/runs/1/findings")[1]
    assert none["findings"] == [] and none["advised"] is False


def test_callgraph_and_annotate(api: Api) -> None:
    _, graph = get(api, "/api/runs/2/callgraph", function="compute_hot")
    assert graph["callers"][0]["function"] == "run_engine"
    assert {c["function"] for c in graph["callees"]} == {"[self]", "malloc"}
    _, doc = get(api, "/api/runs/2/annotate", function="compute_hot")
    (engine,) = doc["files"]
    hot = next(line for line in engine["lines"] if line["line"] == 13)
    assert engine["found"] and "step_3(x)" in hot["source"]
    assert hot["self"] == pytest.approx(300 / 905)


def test_source_serves_named_file_inside_root(api: Api) -> None:
    status, doc = get(api, "/api/runs/2/source", file=ENGINE)
    assert status == 200 and doc["found"]
    assert doc["lines"][12]["source"].strip().startswith("for (int x : v)")


def test_source_refuses_symlink_escape(api: Api) -> None:
    status, doc = get(api, "/api/runs/2/source", file="src/leak.cc")
    assert status == 200
    assert doc["found"] is False
    assert "TOP SECRET" not in json.dumps(doc)


@pytest.mark.parametrize(
    "file",
    ["../secret.txt", "/etc/passwd", "src/../../secret.txt", "/tmp", "src/engine.cc\0x"],
)
def test_source_refuses_files_debug_info_does_not_name(api: Api, file: str) -> None:
    status, doc = get(api, "/api/runs/2/source", file=file)
    assert status == 404
    assert "names no file" in doc["error"]


@pytest.mark.parametrize(
    ("path", "params", "status", "message"),
    [
        ("/api/runs/2/top", {"by": "color"}, 400, "bad by='color'"),
        ("/api/runs/2/top", {"limit": "3"}, 400, "unknown parameter 'limit'"),
        ("/api/runs/2/flame", {"state": "dancing"}, 400, "bad state='dancing'"),
        ("/api/runs/2/flame", {"thread": "abc"}, 400, "bad thread='abc'"),
        ("/api/runs/2/callgraph", {}, 400, "missing parameter function"),
        ("/api/runs/2/callgraph", {"function": "nope"}, 404, "no function 'nope'"),
        ("/api/runs/2/source", {"file": ["a", "b"]}, 400, "given 2 times"),
        ("/api/runs/2/source", {"file": "x" * 5000}, 400, "longer than"),
        ("/api/runs/77", {}, 404, "no run '77'"),
        ("/api/runs/..", {}, 400, "bad run reference"),
        ("/api/runs/\u00b2", {}, 400, "bad run reference"),
        ("/api/runs/2/top", {"thread": "\u00b2"}, 400, "bad thread"),
        ("/api/runs/latest~9", {}, 404, "has only 2 run(s)"),
        ("/api/diff", {"a": "1"}, 400, "give both runs"),
        ("/api/nothing", {}, 404, "no such API endpoint"),
    ],
)
def test_bad_input_gets_clear_4xx(
    api: Api, path: str, params: dict, status: int, message: str
) -> None:
    got_status, doc = get(api, path, **params)
    assert got_status == status
    assert message in doc["error"]


def test_hostile_symbol_stays_data_in_json(api: Api) -> None:
    _, doc = get(api, "/api/runs/2/top")
    assert HOSTILE in [r["function"] for r in doc["rows"]]
    _, graph = get(api, "/api/runs/2/callgraph", function=HOSTILE)
    assert graph["function"] == HOSTILE


def test_diff_and_experiments(api: Api) -> None:
    _, doc = get(api, "/api/diff", a="1", b="2")
    assert doc["rows"][0]["function"] == "compute_hot"
    assert doc["rows"][0]["delta_self"] < 0
    _, exps = get(api, "/api/runs/2/experiments")
    assert exps["experiments"][0]["data"]["ratio"] == 1.42
    assert exps["experiments"][0]["verdicts"] == []


def test_experiment_verdicts_are_the_cli_sentences(api: Api) -> None:
    _, doc = get(api, "/api/experiments")
    (exp,) = doc["experiments"]
    assert exp["verdicts"] == [
        "mimalloc: too few runs to tell a difference from baseline (ratio 1.400, "
        f"95% CI 1.081-1.955, p=0.0625, 5 pairs); use --runs {MIN_PAIRS_FOR_CLAIM} or more"
    ]


def test_flame_is_binary_and_cached(api: Api, tmp_path: Path) -> None:
    first = api.get("/api/runs/2/flame", {})
    again = api.get("/api/runs/2/flame", {})
    assert first.content_type == "application/octet-stream"
    assert first.body is again.body


def test_run_recorded_while_serving_is_found(tmp_path: Path) -> None:
    store, _ = make_store(tmp_path)
    api = Api(store, [])
    assert get(api, "/api/runs/latest")[1]["id"] == "2"
    store.add_run(RunInfo(command="later"), Recording(store.load(1)))
    status, run = get(api, "/api/runs/3")
    assert status == 200 and run["command"] == "later"


def test_findings_added_while_serving_appear(tmp_path: Path) -> None:
    store, _ = make_store(tmp_path)
    api = Api(store, [])
    assert get(api, "/api/runs/1/findings")[1]["findings"] == []
    new = Finding("note.new", "note", "new", 0.1, 0.05, 0.5, "look")
    store.put_document(1, "findings", "advisor", [new.to_json()])
    assert [f["title"] for f in get(api, "/api/runs/1/findings")[1]["findings"]] == ["new"]


def test_binary_answers_gzip_on_demand(api: Api) -> None:
    """Only clients off loopback ask for the gzipped body; it is made once, then kept."""
    flame = api.get("/api/runs/2/flame", {})
    assert "gzipped" not in vars(flame)  # not compressed until asked
    assert flame.gzipped is not None and gzip.decompress(flame.gzipped) == flame.body
    assert flame.gzipped is flame.gzipped
    assert api.get("/api/runs", {}).gzipped is None


def test_source_of_the_users_own_run_is_read_where_its_debug_info_names_it(
    tmp_path: Path,
) -> None:
    """A library's file outside the run's working directory needs no --src for a run of
    the user's own command; an import's debug info is not trusted to name files."""
    from perfsleuth.model.profile import Frame, ProfileBuilder
    from perfsleuth.store.runs import Store

    outside = tmp_path / "lib" / "hash.c"
    outside.parent.mkdir()
    outside.write_text("int hash(int x) {\n  return x * 31;\n}\n")
    (tmp_path / "cwd").mkdir()
    builder = ProfileBuilder()
    builder.add([Frame("hash", "app", str(outside), 2), Frame("main", "app")], 3.0)
    store = Store(tmp_path / "store")
    for source in ("record", "import:perf.data"):
        info = RunInfo(command="./app", cwd=str(tmp_path / "cwd"), source=source)
        store.add_run(info, Recording(builder.build()))
    api = Api(store, [])
    _, own = get(api, "/api/runs/1/source", file=str(outside))
    assert own["found"] and own["lines"][1]["source"] == "  return x * 31;"
    assert own["root"] is None
    _, imported = get(api, "/api/runs/2/source", file=str(outside))
    assert imported["found"] is False and "x * 31" not in json.dumps(imported)
    _, annotated = get(api, "/api/runs/1/annotate", function="hash")
    assert annotated["files"][0]["found"]
