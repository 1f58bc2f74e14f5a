"""The JSON (and binary flame graph) API over the run store, independent of HTTP.

`Api.get(path, query)` answers one GET request; the HTTP server and the
single-file report both go through it, so the report embeds exactly what the
server would have sent.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from .. import rank
from ..collect.run_facts import is_own_command
from ..errors import NothingStored, UserError
from ..experiments.verdict import verdict_lines
from ..model.counts import ExactCounts
from ..model.cpu_cache import CacheProjections
from ..model.findings import Finding
from ..model.leaf_costs import LeafCosts
from ..model.profile import Profile
from ..model.run import RunInfo
from ..model.states import STATES
from ..model.timeline import Timeline
from ..store.answers import AnswerFiles
from ..store.run_index import is_run_reference, resolve
from ..store.runs import Store
from ..views import (
    callgraph,
    cpu_cache,
    diff,
    disassembly,
    documents,
    flame,
    run_answers,
    source,
    threads,
    timeline,
)
from ..views.documents import Choices
from ..views.keys import GROUPINGS
from .advise_jobs import AdviseJobs
from .in_memory import FileVersioned, Memo

MAX_PARAM_CHARS = 4096
STANDALONE_RUN = 0  # the run id experiments not tied to a recorded run are kept under
DIFF_ROWS = 200
JSON_TYPE = "application/json; charset=utf-8"
BINARY_TYPE = "application/octet-stream"


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes
    compressible: bool = False  # worth gzipping for clients that accept it

    @cached_property
    def gzipped(self) -> bytes | None:
        """The body compressed once, when first asked: loopback clients never ask (httpd)."""
        # Level 1: a flame graph compresses ~3x in a fraction of the time level 9 takes.
        return gzip.compress(self.body, compresslevel=1, mtime=0) if self.compressible else None


def binary_response(body: bytes) -> Response:
    return Response(200, BINARY_TYPE, body, compressible=True)


Query = dict[str, list[str]]
Handler = Callable[..., Any]
Route = tuple[re.Pattern[str], Handler, tuple[str, ...]]  # path, handler, parameters it takes


def json_response(doc: Any, status: int = 200) -> Response:
    return Response(status, JSON_TYPE, run_answers.encode_json(doc))


class Api:
    def __init__(self, store: Store, roots: list[Path], verbose: bool = False) -> None:
        self.store = store
        self.roots = roots
        self.verbose = verbose
        self._profiles = Memo(capacity=6)
        # the flame graph and the time order of one selection share its folded tree
        self._flames = Memo(capacity=2)
        self._results = Memo(capacity=256)
        self._infos = Memo(capacity=256)
        self._changing = FileVersioned(
            lambda: [store.db, store.db.with_name(store.db.name + ".wal")]
        )
        self._kept = AnswerFiles(store.root)
        self._routes: list[Route] = [
            (re.compile(r"/api/runs"), self.runs, ()),
            (re.compile(r"/api/runs/([^/]+)"), self.run, ()),
            (re.compile(r"/api/runs/([^/]+)/top"), self.top, ("by", "state", "thread")),
            (re.compile(r"/api/runs/([^/]+)/flame"), self.flame, ("state", "thread")),
            (re.compile(r"/api/runs/([^/]+)/threads"), self.threads, ()),
            (re.compile(r"/api/runs/([^/]+)/timeline"), self.timeline, ("thread",)),
            (re.compile(r"/api/runs/([^/]+)/callgraph"), self.callgraph, ("function",)),
            (re.compile(r"/api/runs/([^/]+)/annotate"), self.annotate, ("function",)),
            (re.compile(r"/api/runs/([^/]+)/disasm"), self.disasm, ("function",)),
            (re.compile(r"/api/runs/([^/]+)/source"), self.source, ("file",)),
            (re.compile(r"/api/runs/([^/]+)/findings"), self.findings, ()),
            (re.compile(r"/api/runs/([^/]+)/advise"), self.advising, ()),
            (re.compile(r"/api/runs/([^/]+)/experiments"), self.experiments, ()),
            (re.compile(r"/api/runs/([^/]+)/cache"), self.cache, ()),
            (re.compile(r"/api/experiments"), self.all_experiments, ()),
            (re.compile(r"/api/choices"), self.choices, ()),
            (re.compile(r"/api/diff"), self.diff, ("a", "b", "by")),
            (re.compile(r"/api/diff/flame"), self.diff_flame, ("a", "b")),
        ]
        self._jobs = AdviseJobs(store, roots)
        self._posts: list[Route] = [
            (re.compile(r"/api/runs/([^/]+)/advise"), self.start_advising, ()),
        ]

    def get(self, path: str, query: Query) -> Response:
        """Answer one request; bad input becomes a 4xx JSON error, never an exception."""
        return self._answer(self._routes, path, query)

    def post(self, path: str, query: Query) -> Response:
        """The one request that changes the store: advise a run (server/advise_jobs.py)."""
        return self._answer(self._posts, path, query)

    def accepts_post(self, path: str) -> bool:
        return any(pattern.fullmatch(path) for pattern, _, _ in self._posts)

    def _answer(self, routes: list[Route], path: str, query: Query) -> Response:
        try:
            for pattern, handler, allowed in routes:
                match = pattern.fullmatch(path)
                if match:
                    _check_params(query, allowed)
                    result = handler(*match.groups(), query)
                    return result if isinstance(result, Response) else json_response(result)
            raise ApiError(404, f"no such API endpoint: {path}")
        except ApiError as e:
            return json_response({"error": str(e)}, e.status)
        except NothingStored as e:
            return json_response({"error": str(e)}, 404)
        except UserError as e:
            return json_response({"error": str(e)}, 400)

    def add_routes(self, routes: list[Route]) -> None:
        """Endpoints another module answers (server/fleet_api.py), through get()."""
        self._routes += routes

    def warm(self, ref: str) -> None:
        """Compute the run list and a run's whole-run pages ahead of the first page that asks."""
        self.get("/api/runs", {})
        self.keep(ref)

    def keep(self, ref: str) -> None:
        """A run's whole-run pages (views/run_answers.PAGES), computed and kept in the
        store's answers/; a run without a time order answers its page with a 404."""
        for page in run_answers.PAGES:
            self.get(f"/api/runs/{ref}{page.route}", {})

    # -- shared steps ------------------------------------------------------------

    def _run_id(self, ref: str) -> int:
        if not is_run_reference(ref):
            raise ApiError(400, f"bad run reference {ref!r}: use an id, latest or latest~N")
        try:
            return resolve(ref, self._run_ids(), self.store.root)
        except UserError as e:
            raise ApiError(404, str(e)) from e

    def _run_list(self) -> list[RunInfo]:
        return self._changing.get("runs", self.store.runs)

    def _run_ids(self) -> list[int]:
        return [info.id for info in self._run_list()]

    def _listed(self, run_id: int) -> RunInfo:
        return next(info for info in self._run_list() if info.id == run_id)

    def _facts(self, run_id: int) -> dict:
        """The run's threads and states, kept on disk: the flame page needs no profile for them."""
        return self._results.get(
            ("facts", run_id), lambda: json.loads(self._whole_run(run_id, run_answers.FACTS))
        )

    def _whole_run(self, run_id: int, name: str) -> bytes:
        """A whole-run page (views/run_answers.PAGES), read from answers/ or built and kept."""
        page = run_answers.PAGE[name]
        source = run_answers.RunSource(
            self._info(run_id),
            lambda: self._profile(run_id),
            lambda: self._flame_columns(run_id, {}),
            lambda: self._exact(run_id),
            lambda: self.store.documents(run_id, Timeline.KIND).get(Timeline.NAME),
        )
        try:
            return self._kept.get(self._listed(run_id), name, lambda: page.build(source))
        except run_answers.NoSuchPage as e:
            raise ApiError(404, str(e)) from e

    def _profile(self, run_id: int, query: Query | None = None) -> Profile:
        states, tids = _filters(query or {})
        key = (run_id, states, tids)

        def load() -> Profile:
            if states or tids:
                return self._profile(run_id).filtered(states=states or None, tids=tids or None)
            return self.store.load(run_id)

        return self._profiles.get(key, load)

    def _flame_columns(self, run_id: int, query: Query) -> flame.FlameColumns:
        key = (run_id, *_filters(query))
        return self._flames.get(
            key, lambda: flame.flame_columns(self._profile(run_id, query), processes=True)
        )

    def _cached(self, key: tuple, compute: Callable[[], Any]) -> Response:
        """A response computed once per run (runs never change) and kept encoded."""

        def encoded() -> Response:
            result = compute()
            return result if isinstance(result, Response) else json_response(result)

        return self._results.get(key, encoded)

    def _info(self, run_id: int) -> RunInfo:
        return self._infos.get(run_id, lambda: self.store.run_info(run_id))

    def _docs(self, run_id: int, kind: str) -> dict:
        """A run's documents of one kind; every run's are read at once (the runs page)."""
        every_run = self._changing.get(kind, lambda: self.store.documents_of_kind(kind))
        return every_run.get(run_id, {})

    def _function(self, profile: Profile, query: Query) -> str:
        function = _one(query, "function")
        if not function:
            raise ApiError(400, "missing parameter function=NAME")
        if function not in {f.function for f in profile.frames}:
            raise ApiError(404, f"no function {function!r} in this run")
        return function

    # -- endpoints ---------------------------------------------------------------

    def runs(self, query: Query) -> list[dict]:
        if not self.store.db.exists():
            return []  # an empty store is a list with no runs, not an error
        out = []
        for info in self._run_list():
            found = self._advice(info.id)["findings"]
            out.append({**_run_summary(info), "top_finding": found[0] if found else None})
        return out

    def run(self, ref: str, query: Query) -> dict:
        run_id = self._run_id(ref)
        info = self._info(run_id)
        return {
            **_run_summary(info),
            "cwd": info.cwd,
            "host": info.host,
            "cpu_model": info.cpu_model,
            "kernel": info.kernel,
            "git_rev": info.git_rev,
            "source": info.source,
            "dsos": info.dsos,
            "meta": info.meta,
            **self._facts(run_id),
            "findings": len(self._advice(run_id)["findings"]),
            "experiments": len(self._docs(run_id, "experiment")),
            "cache_functions": len(self._docs(run_id, CacheProjections.KIND)),
        }

    def top(self, ref: str, query: Query) -> Response:
        run_id = self._run_id(ref)
        by = _one(query, "by") or "function"
        if by not in GROUPINGS:
            raise ApiError(400, f"bad by={by!r}: use one of {', '.join(GROUPINGS)}")
        filters = _filters(query)

        def compute() -> bytes:
            exact = None if any(filters) else self._exact(run_id)
            return run_answers.top_answer(run_id, self._profile(run_id, query), by, exact)

        def whole_run() -> bytes:
            # Kept on disk too: `serve` warms it, and loading the run would hold the
            # interpreter while a fresh server's first pages are asked for.
            return self._kept.get(self._listed(run_id), run_answers.top_name(by), compute)

        body = whole_run if not any(filters) else compute

        return self._cached(("top", run_id, by, *filters), lambda: Response(200, JSON_TYPE, body()))

    def flame(self, ref: str, query: Query) -> Response:
        run_id = self._run_id(ref)
        filters = _filters(query)

        def build() -> bytes:
            return flame.encode(self._flame_columns(run_id, query))

        def whole_run() -> bytes:
            return self._whole_run(run_id, run_answers.FLAME)

        body = build if any(filters) else whole_run
        return self._cached(("flame", run_id, *filters), lambda: binary_response(body()))

    def timeline(self, ref: str, query: Query) -> Response:
        """The samples in time order, on the nodes of /flame with the same thread filter."""
        run_id = self._run_id(ref)
        tids = _filters(query)[1]

        def compute() -> bytes:
            found = self.store.documents(run_id, Timeline.KIND).get(Timeline.NAME)
            if found is None:
                raise ApiError(404, timeline.missing(self._info(run_id)))
            profile = self._profile(run_id, query)
            return timeline.encode(profile, self._flame_columns(run_id, query), found, set(tids))

        def whole_run() -> bytes:
            return self._whole_run(run_id, run_answers.TIME_ORDER)

        body = whole_run if not tids else compute
        return self._cached(("timeline", run_id, tids), lambda: binary_response(body()))

    def threads(self, ref: str, query: Query) -> Response:
        run_id = self._run_id(ref)
        return self._cached(
            ("threads", run_id), lambda: threads.document(run_id, self._profile(run_id))
        )

    def callgraph(self, ref: str, query: Query) -> Response:
        run_id = self._run_id(ref)
        profile = self._profile(run_id)
        function = self._function(profile, query)
        return self._cached(
            ("callgraph", run_id, function),
            lambda: {"run": str(run_id), **callgraph.neighbours(profile, function)},
        )

    def annotate(self, ref: str, query: Query) -> Response:
        run_id = self._run_id(ref)
        profile = self._profile(run_id)
        function = self._function(profile, query)
        roots = self._roots(run_id)
        return self._cached(
            ("annotate", run_id, function),
            lambda: {
                "run": str(run_id),
                **source.function_document(profile, function, roots, self._own(run_id)),
            },
        )

    def disasm(self, ref: str, query: Query) -> dict:
        """The machine code of a function's hot lines; not kept, as the binary on disk
        may be rebuilt while the server runs (then it says so)."""
        run_id = self._run_id(ref)
        profile = self._profile(run_id)
        function = self._function(profile, query)
        info = self._info(run_id)
        costs = self.store.documents(run_id, LeafCosts.KIND).get(LeafCosts.NAME)
        doc = disassembly.hot_line_code(profile, function, info.dsos, costs, info.mode)
        return {"run": str(run_id), **doc}

    def source(self, ref: str, query: Query) -> Response:
        run_id = self._run_id(ref)
        profile = self._profile(run_id)
        file = _one(query, "file")
        if not file:
            raise ApiError(400, "missing parameter file=PATH")
        if file not in source.named_files(profile):
            raise ApiError(404, f"run {run_id}'s debug info names no file {file!r}")
        roots = self._roots(run_id)
        return self._cached(
            ("source", run_id, file),
            lambda: {
                "run": str(run_id),
                **source.file_document(profile, file, roots, self._own(run_id)),
            },
        )

    def _roots(self, run_id: int) -> list[Path]:
        return source.source_roots(self.roots, self._info(run_id))

    def _exact(self, run_id: int) -> ExactCounts | None:
        return run_answers.exact_counts(self.store, self._info(run_id))

    def _own(self, run_id: int) -> bool:
        """Whether the run's debug info may name files outside the roots (views/source.py)."""
        return is_own_command(self._info(run_id))

    def advising(self, ref: str, query: Query) -> dict[str, str]:
        """How advising the run from the page goes: idle, running, done or failed."""
        return self._jobs.state(self._run_id(ref)).to_json()

    def start_advising(self, ref: str, query: Query) -> Response:
        return json_response(self._jobs.start(self._run_id(ref)).to_json(), 202)

    def findings(self, ref: str, query: Query) -> documents.Advice:
        """The run's ranked findings: rank.Advice, as `perfsleuth advise --format json`."""
        return self._advice(self._run_id(ref))

    def _advice(self, run_id: int) -> documents.Advice:
        def ranked() -> documents.Advice:
            stored = self._docs(run_id, "findings")  # advise keeps its (maybe empty) list
            found = [Finding.from_json(item) for items in stored.values() for item in items]
            return rank.advice(str(run_id), found, advised=bool(stored)).to_json()

        return self._changing.get(("advice", run_id), ranked)

    def experiments(self, ref: str, query: Query) -> dict:
        run_id = self._run_id(ref)
        return {"run": str(run_id), "experiments": self._experiments(run_id)}

    def cache(self, ref: str, query: Query) -> Response:
        """The projections of a `--mode cache` run, as `perfsleuth cache show` gives them."""
        run_id = self._run_id(ref)

        def compute() -> dict:
            doc = cpu_cache.projections(self.store, run_id)
            if doc is None:
                raise ApiError(404, cpu_cache.no_projections(run_id))
            return doc

        return self._cached(("cache", run_id), compute)

    def all_experiments(self, query: Query) -> dict:
        """Experiments kept apart from any run (`perfsleuth try`, `compare`: run id 0)."""
        return {"experiments": self._experiments(STANDALONE_RUN)}

    def _experiments(self, run_id: int) -> list[dict]:
        docs = self._docs(run_id, "experiment")
        return [
            {"name": name, "data": data, "verdicts": verdict_lines(data)}
            for name, data in sorted(docs.items(), reverse=True)
        ]

    def choices(self, query: Query) -> Choices:
        """The choice lists the UI offers: groupings, label groupings, thread states."""
        return documents.choices()

    def _pair(self, query: Query) -> tuple[int, int]:
        a, b = _one(query, "a"), _one(query, "b")
        if not a or not b:
            raise ApiError(400, "give both runs to compare: a=RUN&b=RUN")
        return self._run_id(a), self._run_id(b)

    def diff(self, query: Query) -> Response:
        a, b = self._pair(query)
        by = _one(query, "by") or "function"
        if by not in GROUPINGS:
            raise ApiError(400, f"bad by={by!r}: use one of {', '.join(GROUPINGS)}")
        return self._cached(
            ("diff", a, b, by),
            lambda: {
                "a": str(a),
                "b": str(b),
                **diff.diff(self._profile(a), self._profile(b), by=by, n=DIFF_ROWS),
            },
        )

    def diff_flame(self, query: Query) -> Response:
        a, b = self._pair(query)
        return self._cached(
            ("diff-flame", a, b),
            lambda: binary_response(
                flame.encode(flame.diff_columns(self._profile(a), self._profile(b)))
            ),
        )


def _run_summary(info: RunInfo) -> dict:
    return {**info.summary(), "unit": info.unit, "total": info.total, "samples": info.samples}


def _check_params(query: Query, allowed: tuple[str, ...]) -> None:
    for name, values in query.items():
        if name not in allowed:
            hint = f"; this endpoint takes {', '.join(allowed)}" if allowed else ""
            raise ApiError(400, f"unknown parameter {name!r}{hint}")
        if name not in ("state", "thread") and len(values) > 1:
            raise ApiError(400, f"parameter {name!r} given {len(values)} times")
        if any(len(v) > MAX_PARAM_CHARS for v in values):
            raise ApiError(400, f"parameter {name!r} is longer than {MAX_PARAM_CHARS} characters")


def _one(query: Query, name: str) -> str:
    values = query.get(name) or [""]
    return values[0]


def _filters(query: Query) -> tuple[tuple[str, ...], tuple[int, ...]]:
    states = tuple(sorted(set(query.get("state", []))))
    for state in states:
        if state not in STATES:
            raise ApiError(400, f"bad state={state!r}: use one of {', '.join(STATES)}")
    tids = []
    for value in query.get("thread", []):
        if not re.fullmatch(r"[0-9]{1,18}", value):
            raise ApiError(400, f"bad thread={value!r}: give a thread id (a number)")
        tids.append(int(value))
    return states, tuple(sorted(set(tids)))
