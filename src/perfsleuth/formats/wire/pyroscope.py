"""Pyroscope's /ingest bodies: folded stacks (`a;b;c N`, root first), pprof, or JFR.

A pprof body comes raw or, as Pyroscope's Go client sends it, as multipart/form-data
whose `profile` part holds the (gzipped) profile and whose `sample_type_config` part
names its types (mutex or block for contentions/delay, and which are cumulative). The
Java agent's format=jfr is multipart too: its `jfr` and `labels` parts are read by
formats.wire.jfr. The query parameters (name, from, until, sampleRate, spyName) are parsed by
ingest.IngestParams.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from itertools import chain

from perfsleuth.errors import UserError
from perfsleuth.formats import speedscope
from perfsleuth.formats.wire import ingest, jfr, window_pprof
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError
from perfsleuth.model.fleet import PROFILE_TYPES, Window
from perfsleuth.model.profile import Profile

FORMATS = ("folded", "lines", "speedscope", "pprof", "jfr")
BOUNDARY = re.compile(r'boundary="?([^";]{1,200})"?')
PART_NAME = re.compile(rb'(?i)content-disposition:[^\r\n]*?\bname="([^"]*)"')
PROFILE_PART = "profile"
JFR_PART, LABELS_PART = "jfr", "labels"
CONFIG_PART = "sample_type_config"
MAX_COUNT_DIGITS = 16
# Bytes of stack texts kept across pushes (see _Stacks), as _entry_bytes estimates them.
STACKS_LIMIT = 32 << 20
TIMED_TYPES = ("mutex_delay", "block_delay")  # text values in nanoseconds


def decode(
    body: bytes, params: IngestParams, content_type: str, limit: int = ingest.MAX_DECOMPRESSED
) -> list[Window]:
    """The Windows a Pyroscope client pushed; PayloadError when it is refused. Without
    `format=`, a multipart body is a pprof (the Go SDK sends no format), else folded."""
    multipart = content_type.startswith("multipart/form-data")
    kind = params.format or ("pprof" if multipart else "folded")
    if kind == "pprof":
        parts = _parts(body, content_type) if multipart else {PROFILE_PART: body}
        if PROFILE_PART not in parts:
            raise PayloadError("multipart body without a `profile` part holding the pprof")
        config = _config(parts.get(CONFIG_PART, b""))
        cumulative = frozenset(
            k for k, t in config.items() if isinstance(t, dict) and t.get("cumulative") is True
        )
        params = replace(params, lock=_lock(config), cumulative=cumulative)
        return window_pprof.decode(parts[PROFILE_PART], params, limit)
    if params.start is None or params.end is None:
        raise PayloadError(
            f"missing query parameters from and until (unix seconds): a {kind} body has no "
            "time of its own"
        )
    if kind == "jfr":
        parts = _parts(body, content_type) if multipart else {JFR_PART: body}
        if JFR_PART not in parts:
            raise PayloadError("multipart body without a `jfr` part holding the recording")
        budget = ingest.PushBudget(limit)
        return jfr.decode(parts[JFR_PART], parts.get(LABELS_PART, b""), params, budget)
    if kind == "speedscope":
        return [_speedscope(ingest.gunzip(body, limit), params)]
    if kind not in ("folded", "lines"):
        raise PayloadError(
            f"format={kind[:40]} is not supported: use folded, lines, speedscope, pprof or jfr"
        )
    return [_folded(ingest.gunzip(body, limit), params, per_sample=kind == "lines")]


def _folded(body: bytes, params: IngestParams, per_sample: bool = False) -> Window:
    """Folded stacks (`a;b;c 12`), or with PER_SAMPLE Pyroscope's `lines` (a line per
    sample, `a;b;c`), as the type the push's name says: read natively when the native
    reader takes the text whole (native/src/folded.rs), else by _read_folded, which
    says what is wrong with it."""
    unit = "ns" if params.name_type in TIMED_TYPES else "samples"
    meta = {"format": "folded", "spy": params.spy_name}
    native = window_pprof.native_reader("decode_folded")
    read = native(body, per_sample, window_pprof.named_frame)
    if read is None:
        profile = _read_folded(body, per_sample, window_pprof.Rows(unit, meta))
    else:
        frames, stacks, counts = read  # a row per stack, no thread
        rows = (list(range(len(stacks))), [-1] * len(stacks))
        profile = window_pprof.rows_profile(
            frames, stacks, rows, (counts, list(counts)), [], unit, meta
        )
    rate = params.sample_rate if params.name_type in ingest.RATED_TYPES else 0.0
    return _text_window(params, profile, rate, params.name_type)


def _read_folded(body: bytes, per_sample: bool, rows: window_pprof.Rows) -> Profile:
    """A folded text's profile, its frames and stacks in the order they first appear;
    a PayloadError for a text the store does not take."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PayloadError(
            f"folded stacks are not UTF-8 (byte {e.start}): a pprof or JFR body needs "
            "format=pprof or format=jfr (or a multipart `profile` part)"
        ) from None
    budget = ingest.PushBudget()
    lines: list[tuple[tuple[str, ...], int]] = []  # each line's names leaf first, its count
    root_first: list[tuple[str, ...]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            if per_sample:
                names, leaf_first = _STACKS.names(line.rstrip(), number)
                count = 1
            else:
                names, leaf_first, count = _folded_line(line, number)
            budget.spend(len(names))
            root_first.append(names)
            lines.append((leaf_first, count))
    # the push's distinct names in the order they first appear, each a frame index
    ids = {name: i for i, name in enumerate(dict.fromkeys(chain.from_iterable(root_first)))}
    budget.create(len(ids))
    stacks: dict[tuple[int, ...], int] = {}
    for leaf_first, count in lines:
        stack = tuple(map(ids.__getitem__, leaf_first))
        rows.add(stacks.setdefault(stack, len(stacks)), None, count, count)
    return rows.profile(list(map(window_pprof.named_frame, ids)), list(stacks))


def _speedscope(body: bytes, params: IngestParams) -> Window:
    """A speedscope document (py-spy's `-f speedscope`): time as CPU or wall time (the
    name's type), `none` as samples at sampleRate, bytes as the name's memory type."""
    try:
        profile = speedscope.parse(body, "the speedscope body")
    except PayloadError:
        raise
    except UserError as e:
        raise PayloadError(str(e)) from None
    budget = ingest.PushBudget()
    budget.create(len(profile.frames))
    for stack in profile.stacks:
        if len(stack) > ingest.MAX_STACK_DEPTH:
            depth = ingest.MAX_STACK_DEPTH
            raise PayloadError(f"a speedscope stack is deeper than {depth} frames")
        budget.spend(len(stack))
    kind, rate = params.name_type, 0.0
    if profile.unit == "samples":
        rate = params.sample_rate if kind in ingest.RATED_TYPES else 0.0
    elif profile.unit == "ns" and kind not in ingest.RATED_TYPES:
        kind = "cpu"
    elif profile.unit == "bytes" and PROFILE_TYPES[kind] != "bytes":
        kind = "alloc_space"
    profile.meta["spy"] = params.spy_name
    return _text_window(params, profile, rate, kind)


def _text_window(params: IngestParams, profile: Profile, rate: float, kind: str) -> Window:
    """The window of a push that has no time or labels of its own (folded, lines,
    speedscope): the query's."""
    assert params.start is not None and params.end is not None  # decode() checks them
    return Window(
        id=params.window_id,
        start=params.start,
        end=params.end,
        profile=profile,
        labels=dict(params.labels),
        rate_hz=rate,
        type=kind,
    )


class _Stacks:
    """Stack texts checked and split, kept across pushes: a fleet pushes the same stacks
    window after window, and checking, splitting and interning each line's names again
    was two thirds of a folded push's decoding (bench/ingest_clients.py: 0.40 ms of a
    push's 2.0 ms of collector CPU; its names are long). Cleared past STACKS_LIMIT
    bytes; its dict is changed by single operations the GIL keeps whole."""

    def __init__(self, limit: int = STACKS_LIMIT) -> None:
        self.limit = limit
        self.split: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.held_bytes = 0

    def names(self, stack: str, number: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The stack's names root first and leaf first; a PayloadError for a bad one."""
        found = self.split.get(stack)
        if found is None:
            if ingest.CONTROL.search(stack):
                raise PayloadError(f"folded line {number}: a frame holds control characters")
            names = stack.split(";")
            if len(names) > ingest.MAX_STACK_DEPTH:
                depth = ingest.MAX_STACK_DEPTH
                raise PayloadError(f"folded line {number}: deeper than {depth} frames")
            for name in names:
                ingest.text(name, f"folded line {number}: a frame")
            cost = _entry_bytes(stack, len(names))
            if self.held_bytes + cost > self.limit:
                self.split.clear()
                self.held_bytes = 0
            found = self.split[stack] = (tuple(names), tuple(reversed(names)))
            self.held_bytes += cost
        return found


def _entry_bytes(stack: str, names: int) -> int:
    """What one kept stack holds in CPython: its text as the key, each name as its own
    string (~50 bytes of header), two tuples of pointers, the dict's slot. Short names
    cost mostly headers: 1 MiB of 2-character names held ~24 MB (a reviewer measured)."""
    return 2 * len(stack) + 66 * names + 200


_STACKS = _Stacks()


def _folded_line(line: str, number: int) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """A line's names root first and leaf first, and its count."""
    stack, _, raw = line.rstrip().rpartition(" ")
    if not stack:
        raise PayloadError(f"folded line {number}: expected `frame;frame;... COUNT`")
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_COUNT_DIGITS:
        raise PayloadError(
            f"folded line {number}: the count {raw[:20]!r} is not a whole number of at most "
            f"{MAX_COUNT_DIGITS} digits"
        )
    names, leaf_first = _STACKS.names(stack, number)
    return names, leaf_first, ingest.count(int(raw), f"folded line {number}: the count")


def _parts(body: bytes, content_type: str) -> dict[str, bytes]:
    """The parts of a multipart form by name, their bytes as sent (HTTP clients send
    form parts as binary: no transfer encoding). Split by hand: the email parser took
    4 ms of a push's ~12 ms of collector CPU."""
    boundary = BOUNDARY.search(content_type)
    if boundary is None:
        raise PayloadError("multipart body without a boundary in its Content-Type")
    parts: dict[str, bytes] = {}
    delimiter = b"\r\n--" + boundary.group(1).encode("latin-1", "replace")
    for chunk in (b"\r\n" + body).split(delimiter)[1:]:
        if chunk.startswith(b"--"):
            break
        head, found, payload = chunk.partition(b"\r\n\r\n")
        name = PART_NAME.search(head)
        if found and name:
            parts[name.group(1).decode("latin-1")] = payload
    return parts


def _config(config: bytes) -> dict:
    """The sample_type_config part: {pprof sample type: {"units", "display-name",
    "cumulative", ...}} (pyroscope-go's upstream.SampleType)."""
    try:
        types = json.loads(config) if config else {}
    except ValueError as e:
        raise PayloadError(f"the sample_type_config part is not JSON ({e})") from None
    if not isinstance(types, dict):
        raise PayloadError("the sample_type_config part is not a JSON object")
    return types


def _lock(types: dict) -> str:
    """Which lock profile the Go SDK's sample_type_config names: its `display-name`s are
    block_count/block_duration or mutex_count/mutex_duration."""
    names = [t.get("display-name", "") for t in types.values() if isinstance(t, dict)]
    return "block" if any(str(n).startswith("block") for n in names) else "mutex"
