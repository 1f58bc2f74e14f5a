"""The collector's endpoints: pushes in, one Window each, appended to the fleet store.

A small push (a body up to INLINE_BODY, inflating to at most INLINE_INFLATED, neither
JFR nor speedscope) into a local store is decoded and logged on the event loop, and its
answer waits for the log's fsync, which one thread makes for all the pushes logged
meanwhile (syncer.py): a hop to a worker thread and back cost more than decoding such
a push (~0.3 ms). Any other push is decoded and appended on one worker thread (decoding
is CPU work, a store on S3 is asked whether a window is stored, and the log is
fsynced), in one hop. web.app answers the POST endpoints directly (`pushes`), past
Starlette's router. A push is acknowledged once its windows are in the head's
write-ahead log; the head writes them to the store in batches (store/fleet/head.py), so
many small pushes cost one Parquet append.
A push names its window: the agent in X-Perfsleuth-Window, anyone else by the hash
of the body and the query, so a retried identical push is stored once.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import orjson
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
    ExportProfilesServiceResponse,
)
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..errors import UserError
from ..formats.wire import (
    grpc_web,
    ingest,
    otlp_profiles,
    pyroscope,
    pyroscope_push,
    window_pprof,
)
from ..formats.wire.ingest import IngestParams, PayloadError
from ..model.fleet import WINDOW_ID, Window
from ..store.fleet import FleetStore, StoreUnavailable
from ..store.fleet.head import Head
from ..store.fleet.wal import Segment
from ..web.app import Endpoint, read_body
from .cardinality import Cardinality
from .deltas import Deltas, is_cumulative
from .syncer import Syncer

CONNECT_PUSH = "/push.v1.PusherService/Push"
GRPC_WEB = "connect_grpc_web"  # /metrics' endpoint of a gRPC-Web push
JSON = "application/json"
# Why a push stored nothing (its answer's `reason`).
BASELINE_REASON = "a cumulative series' first push: its baseline (the next is stored as its delta)"
EMPTY_REASON = "no samples in the push"
# Query keys of the plain pprof push that are not labels.
PPROF_PARAMS = ("from", "until", "sampleRate")
MAX_STATUS_FIELDS = 64
# Status documents are written on at most this many threads.
WORKERS = 2
# A push is decoded and appended on one of these threads: appends mostly wait (fsyncs
# of the head's log, which the appends that meet share), so more run at once.
APPENDERS = 32
# A push is decoded on the event loop when its body (Content-Encoding inflated) is at
# most INLINE_BODY and its gzip data inflates to at most INLINE_INFLATED: a fleet
# window's pprof is ~1.5 KB (5 KB inflated), its folded text 14-54 KB, ~0.3 ms to
# decode; the worst, 64 KB of distinct one-frame folded lines, ~50 ms (a worker held
# the interpreter lock as long). Past either, or JFR (~0.3 ms a KB) or speedscope, a
# worker thread decodes it.
INLINE_BODY = 64 << 10
INLINE_INFLATED = 64 << 10
WORKER_FORMATS = ("jfr", "speedscope")  # read in Python, costlier a byte: on a worker

# The cyclic garbage collector's first threshold in a collector process (Python's is
# 700): a push allocates thousands of lists and tuples, none in a cycle, and the
# collections they set off, the oldest generation's walking the head's columns, took
# ~10% of a fleet push's CPU (perf).
GC_THRESHOLD = 100_000

T = TypeVar("T")


def tune_gc() -> None:
    """For a long-running collector: what start-up loaded left out of every collection,
    and collections rarer."""
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


@dataclass
class Metrics:
    """Counters of /metrics, Prometheus text."""

    pushes: Counter[tuple[str, str]] = field(default_factory=Counter)
    bytes: int = 0
    samples: int = 0

    def text(self) -> str:
        lines = [
            "# HELP perfsleuth_collector_pushes_total Pushes by endpoint and result.",
            "# TYPE perfsleuth_collector_pushes_total counter",
        ]
        for (endpoint, result), n in sorted(self.pushes.items()):
            labels = f'endpoint="{endpoint}",result="{result}"'
            lines.append(f"perfsleuth_collector_pushes_total{{{labels}}} {n}")
        lines += [
            "# HELP perfsleuth_collector_bytes_total Body bytes of accepted pushes.",
            "# TYPE perfsleuth_collector_bytes_total counter",
            f"perfsleuth_collector_bytes_total {self.bytes}",
            "# HELP perfsleuth_collector_samples_total Samples of accepted pushes.",
            "# TYPE perfsleuth_collector_samples_total counter",
            f"perfsleuth_collector_samples_total {self.samples}",
        ]
        return "\n".join(lines) + "\n"


class Collector:
    def __init__(
        self,
        store: FleetStore,
        head: Head,
        max_inflated: int,
        cardinality: Cardinality | None = None,
    ) -> None:
        window_pprof.native_reader()  # a collector that cannot read pprof does not start
        self.store = store
        self.head = head
        self.max_inflated = max_inflated
        self.cardinality = cardinality or Cardinality()
        self.metrics = Metrics()
        self.deltas = Deltas()
        self.workers = ThreadPoolExecutor(WORKERS, thread_name_prefix="status")
        self.appenders = ThreadPoolExecutor(APPENDERS, thread_name_prefix="append")
        self.syncer = Syncer()
        self.inline = store.files.local  # a store on S3 answers `stored` over the network

    def pushes(self) -> dict[str, Endpoint]:
        """The POST endpoints by path: web.app answers them directly (create_app's `direct`)."""
        return {
            "/ingest": self.ingest,
            # perfsleuth's agent: its windows in the /ingest body and query (window_pprof)
            window_pprof.AGENT_ROUTE: self.ingest,
            "/v1development/profiles": self.otlp,
            "/pprof": self.pprof,
            CONNECT_PUSH: self.connect_push,
            "/agent/status": self.agent_status,
        }

    def routes(self) -> list[Route]:
        return [Route(path, push, methods=["POST"]) for path, push in self.pushes().items()] + [
            Route("/healthz", self.healthz, methods=["GET"]),
            Route("/metrics", self.prometheus, methods=["GET"]),
        ]

    async def ingest(self, request: Request) -> Response:
        body = await read_body(request)
        content_type = request.headers.get("content-type", "")

        def decode(limit: int) -> list[Window]:
            params = IngestParams.parse(request.query_params, _window_id(request, body))
            return pyroscope.decode(body, params, content_type, limit)

        inline = request.query_params.get("format") not in WORKER_FORMATS
        return await self._push("ingest", body, decode, inline)

    async def pprof(self, request: Request) -> Response:
        body = await read_body(request)

        def decode(limit: int) -> list[Window]:
            params = _pprof_params(request, _window_id(request, body))
            return window_pprof.decode(body, params, limit)

        return await self._push("pprof", body, decode)

    async def connect_push(self, request: Request) -> Response:
        """Pyroscope's Connect push: an empty PushResponse, or a Connect error as JSON
        (gRPC-Web's framing and status for a gRPC-Web call)."""
        content_type = request.headers.get("content-type", "")
        body = await read_body(request)
        if grpc_web.is_grpc_web(content_type):
            return await self._grpc_web_push(request, body, content_type)
        try:
            media = pyroscope_push.media_type(content_type)
        except PayloadError as e:
            return _connect_error(415, "unknown", e)
        answer = await self.pyroscope_push(body, content_type, _digest(request, body), "connect")
        if answer.status_code != 200:
            return _connect_error(answer.status_code, "invalid_argument", bytes(answer.body))
        return Response(b"{}" if media == pyroscope_push.JSON else b"", media_type=media)

    async def _grpc_web_push(self, request: Request, body: bytes, content_type: str) -> Response:
        """A gRPC-Web push (connect.WithGRPCWeb()): its message stored as a Connect push's."""
        media = content_type.split(";")[0].strip()
        encoding = request.headers.get("grpc-encoding", "identity")
        try:
            message = grpc_web.message(body, encoding, self.max_inflated)
        except PayloadError as e:
            self.metrics.pushes[GRPC_WEB, "rejected"] += 1
            return _grpc_web_refusal(grpc_web.INVALID_ARGUMENT, str(e), media)
        pushed = await self.pyroscope_push(
            message, pyroscope_push.PROTO, _digest(request, message), GRPC_WEB
        )
        if pushed.status_code != 200:
            text = bytes(pushed.body).decode(errors="replace")
            return _grpc_web_refusal(grpc_web.INVALID_ARGUMENT, text, media)
        return Response(grpc_web.answer(b""), media_type=media)  # an empty PushResponse

    async def pyroscope_push(
        self, body: bytes, content_type: str, digest: str, endpoint: str
    ) -> Response:
        """A push.v1.PushRequest stored, over Connect or gRPC (`endpoint` in /metrics):
        the answer _push gives (a 400 saying why it was refused)."""
        request_id = "c-" + digest

        def decode(limit: int) -> list[Window]:
            return pyroscope_push.decode(body, content_type, request_id, limit)

        return await self._push(endpoint, body, decode)

    async def otlp(self, request: Request) -> Response:
        try:
            media = otlp_profiles.media_type(request.headers.get("content-type", ""))
        except PayloadError as e:
            raise HTTPException(415, str(e)) from None
        body = await read_body(request)
        try:
            answer = await self.otlp_export(body, media, _digest(request, body), "otlp")
        except PayloadError as e:
            return PlainTextResponse(f"{e}\n", status_code=400)
        return Response(otlp_profiles.encode_answer(answer, media), media_type=media)

    async def otlp_export(
        self, body: bytes, media: str, digest: str, endpoint: str
    ) -> ExportProfilesServiceResponse:
        """An OTLP ExportProfilesServiceRequest (`media`: protobuf or JSON) stored, over
        HTTP or gRPC (`endpoint` in /metrics): its answer, the profiles skipped in its
        partial_success. A bad request raises PayloadError (counted as rejected)."""
        request_id = "otlp-" + digest

        def store() -> tuple[otlp_profiles.Export, list[tuple[Window, bool]]]:
            export = otlp_profiles.decode(body, request_id, self.max_inflated, media)
            for window in _checked(export.windows):
                self.cardinality.admit(window.labels)
            return export, list(
                zip(export.windows, self.head.append_all(export.windows), strict=True)
            )

        try:
            export, stored = await self._run(store, self.appenders)
        except PayloadError:
            self.metrics.pushes[endpoint, "rejected"] += 1
            raise
        new = self._count(stored)
        self.metrics.pushes[endpoint, "accepted" if new else "duplicate"] += 1
        if new:
            self.metrics.bytes += len(body)
        answer = ExportProfilesServiceResponse()
        if export.skipped:
            answer.partial_success.rejected_profiles = export.skipped
            answer.partial_success.error_message = export.reason
        return answer

    async def agent_status(self, request: Request) -> Response:
        body = await read_body(request)
        try:
            host, status = _status(body)
        except PayloadError as e:
            return self._refused("agent_status", e)
        await self._run(lambda: self.store.put_host_status(host, status))
        self.metrics.pushes["agent_status", "accepted"] += 1
        return JSONResponse({"host": host})

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def prometheus(self, request: Request) -> Response:
        return PlainTextResponse(self.metrics.text(), media_type="text/plain; version=0.0.4")

    async def _push(
        self,
        endpoint: str,
        body: bytes,
        decode: Callable[[int], list[Window]],
        inline: bool = True,
    ) -> Response:
        """Decode a push into windows (`decode(inflated bytes limit)`) and append them;
        `stored` when any was new. Small pushes on the event loop (see the docstring)."""
        try:
            logged = None
            if inline and self.inline and len(body) <= INLINE_BODY:
                logged = await self._store_inline(decode)
            if logged is None:
                work = lambda: self._store(decode(self.max_inflated))  # noqa: E731
                logged = await self._run(work, self.appenders)
            windows, baselines = logged
        except PayloadError as e:
            return self._refused(endpoint, e)
        if not windows:
            return self._nothing_stored(endpoint, baselines)
        stored = self._count(windows)
        self.metrics.pushes[endpoint, "accepted" if stored else "duplicate"] += 1
        if stored:
            self.metrics.bytes += len(body)
        samples = sum(window.profile.num_samples for window, _ in windows)
        answer = {
            "window": windows[0][0].id,
            "windows": [window.id for window, _ in windows],
            "stored": stored,
            "samples": samples,
        }
        # orjson: Starlette's JSONResponse (json.dumps) was ~3% of a push's event-loop time
        return Response(orjson.dumps(answer), media_type=JSON)

    async def _store_inline(
        self, decode: Callable[[int], list[Window]]
    ) -> tuple[list[tuple[Window, bool]], int] | None:
        """_store on the event loop, its fsync made by the syncer; None when the push
        inflates past INLINE_INFLATED (then a worker decodes it, up to max_inflated)."""
        limit = min(INLINE_INFLATED, self.max_inflated)
        try:
            decoded = decode(limit)
        except ingest.TooLarge:
            if limit >= self.max_inflated:
                raise
            return None
        try:
            stored, baselines, segment, offset = self._log(decoded)
            if segment is not None:
                await self.syncer.synced(segment, offset)
        except StoreUnavailable as e:
            raise HTTPException(503, str(e)) from e
        except ValueError as e:  # a Window the model refuses (an id or a time range)
            raise PayloadError(str(e)) from e
        return stored, baselines

    def _store(self, decoded: list[Window]) -> tuple[list[tuple[Window, bool]], int]:
        """A push's windows checked, as deltas where cumulative (their series' baselines
        left out), admitted and in the head at once (one write, one fsync), on the
        worker that decoded them (a thread hop costs as much as a small push's
        decoding): each window and whether it was new, and how many were baselines."""
        stored, baselines, segment, offset = self._log(decoded)
        if segment is not None:
            segment.sync(offset)
        return stored, baselines

    def _log(
        self, decoded: list[Window]
    ) -> tuple[list[tuple[Window, bool]], int, Segment | None, int]:
        """_store's work but the fsync: durable once `segment.sync(offset)` returned
        (no segment: nothing was logged)."""
        windows = self._deltas(_checked(decoded))
        for window in windows:
            self.cardinality.admit(window.labels)
        baselines = len(decoded) - len(windows)
        if not windows:
            return [], baselines, None, 0
        answers, segment, offset = self.head.log_all(windows)
        return list(zip(windows, answers, strict=True)), baselines, segment, offset

    def _nothing_stored(self, endpoint: str, baselines: int) -> Response:
        """The answer to a push that stored no window: its windows were all cumulative
        series' baselines, or it held no sample (the Java agent's last push of an idle
        interval: a recording without a sample event)."""
        result, reason = ("baseline", BASELINE_REASON) if baselines else ("empty", EMPTY_REASON)
        self.metrics.pushes[endpoint, result] += 1
        answer = {"windows": [], "stored": False, "samples": 0, "reason": reason}
        return Response(orjson.dumps(answer | {"baseline": bool(baselines)}), media_type=JSON)

    def _deltas(self, windows: list[Window]) -> list[Window]:
        """Cumulative windows as their deltas (deltas.py); their series' baselines left out."""
        deltas = [self.deltas.apply(w) if is_cumulative(w) else w for w in windows]
        return [w for w in deltas if w is not None]

    def _count(self, stored: list[tuple[Window, bool]]) -> bool:
        """The new windows' samples counted; whether any was new."""
        self.metrics.samples += sum(w.profile.num_samples for w, new in stored if new)
        return any(new for _, new in stored)

    def close(self) -> None:
        """Waits for the work on its threads: a request cancelled at shutdown (uvicorn's
        grace is over) leaves its thread running."""
        self.appenders.shutdown()
        self.workers.shutdown()
        self.syncer.close()

    async def _run(self, work: Callable[[], T], threads: ThreadPoolExecutor | None = None) -> T:
        """`work` on a worker thread (asyncio's executor: less Python on the event loop
        than anyio's to_thread); a store that cannot write answers 503 (retry later)."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(threads or self.workers, work)
        except StoreUnavailable as e:
            raise HTTPException(503, str(e)) from e
        except ValueError as e:  # a Window the model refuses (an id or a time range)
            raise PayloadError(str(e)) from e

    def _refused(self, endpoint: str, error: UserError) -> Response:
        self.metrics.pushes[endpoint, "rejected"] += 1
        return PlainTextResponse(f"{error}\n", status_code=400)


def _checked(windows: list[Window]) -> list[Window]:
    """Every window of a push checked before any is stored."""
    for window in windows:
        ingest.check_window(window)
    return windows


def _connect_error(status: int, code: str, message: object) -> Response:
    """A Connect unary error: the HTTP status and {"code", "message"}."""
    text = message.decode(errors="replace") if isinstance(message, bytes) else str(message)
    return JSONResponse({"code": code, "message": text.strip()}, status_code=status)


def _grpc_web_refusal(status: int, text: str, media: str) -> Response:
    """A gRPC-Web refusal, trailers-only: HTTP 200, its status in the headers."""
    return Response(b"", headers=grpc_web.refusal(status, text), media_type=media)


def _window_id(request: Request, body: bytes) -> str:
    given = request.headers.get(window_pprof.WINDOW_HEADER)
    if given is None:
        return "p-" + _digest(request, body)
    if not WINDOW_ID.fullmatch(given):
        header = window_pprof.WINDOW_HEADER
        raise PayloadError(f"bad {header} {given[:40]!r}: use letters, digits, . _ -")
    return given


def _digest(request: Request, body: bytes) -> str:
    return digest(request.url.path, request.query_params.multi_items(), body)


def digest(path: str, query: list[tuple[str, str]], body: bytes) -> str:
    """A push's name when its client gives none: the same body to the same path and
    query (a retry) is the same push."""
    h = hashlib.blake2b(digest_size=16)
    h.update(path.encode())
    h.update(json.dumps(sorted(query)).encode())
    h.update(body)
    return h.hexdigest()


def _pprof_params(request: Request, window_id: str) -> IngestParams:
    """Times from from/until (else the profile's own), every other query key a label."""
    query = request.query_params
    start, end = ingest.span(query) if "from" in query or "until" in query else (None, None)
    return IngestParams(
        window_id=window_id,
        start=start,
        end=end,
        labels=ingest.labels({k: v for k, v in query.items() if k not in PPROF_PARAMS}, "query"),
        sample_rate=ingest.sample_rate(query),
        format="pprof",
    )


def _status(body: bytes) -> tuple[str, dict]:
    doc = ingest.json_document(body, "agent status")
    if not isinstance(doc, dict) or not isinstance(doc.get("host"), str) or not doc["host"]:
        raise PayloadError('agent status must be a JSON object with a "host" name')
    if len(doc) > MAX_STATUS_FIELDS:
        raise PayloadError(f"agent status has {len(doc)} fields; at most {MAX_STATUS_FIELDS}")
    for key, value in doc.items():
        ingest.text(key, "agent status field name", 64)
        if isinstance(value, str):
            ingest.text(value, f"agent status {key}", ingest.MAX_LABEL_VALUE)
        elif isinstance(value, float) and not math.isfinite(value):
            raise PayloadError(f"agent status {key} is not a finite number")
        elif not isinstance(value, int | float | bool | None):
            raise PayloadError(f"agent status {key} must be a number or a string")
    host = ingest.text(doc.pop("host"), "agent status host", 255)
    return host, doc
