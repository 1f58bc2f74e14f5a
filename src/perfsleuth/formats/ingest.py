"""What every pushed payload is checked against before it becomes a fleet Window.

The collector's decoders (window_pprof, pyroscope, otlp_profiles) read bytes from
the network: every size, count, depth and label is bounded here, and every refusal
is a PayloadError whose one-line message the collector sends back with a 400.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsleuth.errors import UserError
from perfsleuth.model.fleet import Window

GZIP_MAGIC = b"\x1f\x8b"

# Bounds of what one push may hold; a real agent window is far below each of them.
MAX_DECOMPRESSED = 256 << 20
MAX_STACK_DEPTH = 4096  # frames of one stack, after expanding inlined lines
# Frames of all the samples of one push, after expanding inlined lines: a real agent
# window has about 10,000; this bounds what a few bytes of shared locations expand to.
MAX_PUSH_FRAMES = 1 << 21
# Distinct frames of one push (each costs a few hundred bytes decoded): a busy host's
# window has a few thousand.
MAX_PUSH_NEW_FRAMES = 1 << 19
MAX_LABELS = 32
MAX_LABEL_VALUE = 1024
MAX_NAME = 16384
# Counts and nanoseconds above 2**53 lose precision as floats: nothing real gets there.
# It bounds each value, and also a window's total samples and total CPU ns (so no sum
# of the store's BIGINT columns overflows).
MAX_VALUE = 1 << 53
# A pid label: Linux's reach 2**22, other systems' 2**32.
MAX_PID = (1 << 32) - 1
MAX_SAMPLE_RATE = 1e6
# Unix seconds from 2001 to 2100: anything else is a unit mistake (ms, ns) or garbage.
TIME_RANGE = (1e9, 4.1e9)
TIME_RANGE_SHOWN = "2001-2100 (unix seconds 1e9 to 4.1e9)"
CONTROL = re.compile(r"[\x00-\x1f]")

LABEL_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")
# Pyroscope's name: app name, then optional {k=v,...}.
PYROSCOPE_NAME = re.compile(r"([^{}]*)(?:\{([^{}]*)\})?")
# A profile-type suffix Pyroscope clients append to the app name.
CPU_SUFFIXES = (".cpu", ".itimer")


class PayloadError(UserError):
    """A pushed payload is refused; the message says what is wrong with it."""


def gunzip(data: bytes, limit: int = MAX_DECOMPRESSED) -> bytes:
    """data, decompressed when it is gzip, refused past `limit` bytes (a bomb)."""
    if data[:2] != GZIP_MAGIC:
        return data
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as e:
        raise PayloadError(f"broken gzip data ({e})") from e
    if len(out) > limit:
        raise PayloadError(f"gzip data inflates past the limit of {limit >> 20} MB; refused")
    if not inflater.eof:
        raise PayloadError("gzip data is truncated")
    return out


def count(value: int | float, what: str) -> int:
    """A sample value as a non-negative integer, or a PayloadError naming `what`."""
    if isinstance(value, float) and not math.isfinite(value):
        raise PayloadError(f"{what} is not a finite number")
    if value < 0:
        raise PayloadError(f"{what} is negative ({value})")
    if value > MAX_VALUE:
        raise PayloadError(f"{what} is too large ({value}; at most 2**53)")
    return int(value)


def json_document(data: str | bytes, what: str) -> Any:
    """The JSON value of `data`, or a PayloadError (nesting too deep included)."""
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PayloadError(f"{what} is not JSON ({e})") from None
    except RecursionError:
        raise PayloadError(f"{what} is nested too deeply to be read") from None


class FrameBudget:
    """Frames a push's samples expand to, refused past MAX_PUSH_FRAMES, and distinct
    frames it decodes, refused past MAX_PUSH_NEW_FRAMES."""

    def __init__(self) -> None:
        self.used = 0
        self.created = 0

    def spend(self, frames: int) -> None:
        self.used += frames
        if self.used > MAX_PUSH_FRAMES:
            raise PayloadError(
                f"the push's samples hold more than {MAX_PUSH_FRAMES:,} frames in all "
                "(inlined lines expanded); send smaller pushes"
            )

    def create(self, frames: int) -> None:
        self.created += frames
        if self.created > MAX_PUSH_NEW_FRAMES:
            raise PayloadError(
                f"the push holds more than {MAX_PUSH_NEW_FRAMES:,} distinct frames; "
                "send smaller pushes"
            )


def check_window(window: Window) -> Window:
    """`window` when the store can keep it: times in TIME_RANGE, its total samples and
    CPU ns at most MAX_VALUE, a pid label that is a process id; else a PayloadError."""
    for value, what in ((window.start, "starts"), (window.end, "ends")):
        if not TIME_RANGE[0] <= value <= TIME_RANGE[1]:
            raise PayloadError(f"the window {what} at {value:.6g}, outside {TIME_RANGE_SHOWN}")
    profile = window.profile
    samples = sum(profile.sample_count)
    if samples > MAX_VALUE:
        raise PayloadError(f"the push holds {samples:.3g} samples; at most 2**53 a push")
    if window.rate_hz > 0:
        cpu_ns = samples * (1e9 / window.rate_hz)
        why = f" (samples x 10^9 / sampling rate {window.rate_hz:g} Hz)"
    else:
        cpu_ns, why = math.fsum(profile.sample_weight), ""
    if not cpu_ns <= MAX_VALUE:
        raise PayloadError(f"the push's CPU time is {cpu_ns:.3g} ns{why}; at most 2**53 ns a push")
    pid = window.labels.get("pid")
    if pid is not None and not (pid.isascii() and pid.isdigit() and int(pid) <= MAX_PID):
        raise PayloadError(f"label pid={pid[:40]!r} is not a process id (0 to {MAX_PID})")
    return window


def text(value: str, what: str, limit: int = MAX_NAME) -> str:
    if len(value) > limit:
        raise PayloadError(f"{what} is {len(value)} characters long; at most {limit}")
    if CONTROL.search(value):
        raise PayloadError(f"{what} holds control characters")
    return value


def labels(pairs: Mapping[str, str], what: str) -> dict[str, str]:
    """Label pairs checked for count, key syntax and value length."""
    if len(pairs) > MAX_LABELS:
        raise PayloadError(f"{what}: {len(pairs)} labels; at most {MAX_LABELS}")
    for key, value in pairs.items():
        if not LABEL_KEY.fullmatch(key):
            raise PayloadError(f"{what}: bad label name {key[:40]!r}; use letters, digits, _ .")
        text(value, f"{what}: label {key}", MAX_LABEL_VALUE)
    return dict(pairs)


@dataclass(frozen=True)
class IngestParams:
    """The query parameters of a Pyroscope-style push, checked.

    start and end are None when the push leaves them to the profile (a pprof's
    time_nanos and duration_nanos).
    """

    window_id: str
    start: float | None
    end: float | None
    labels: dict[str, str] = field(default_factory=dict)
    sample_rate: float = 100.0
    spy_name: str = ""
    format: str = "folded"

    @classmethod
    def parse(cls, query: Mapping[str, str], window_id: str) -> IngestParams:
        """Pyroscope's name, from, until, sampleRate, spyName and format."""
        if "name" not in query:
            raise PayloadError("missing query parameter name (e.g. name=myapp.cpu{env=prod})")
        start, end = span(query)
        return cls(
            window_id=window_id,
            start=start,
            end=end,
            labels=parse_name(query["name"]),
            sample_rate=sample_rate(query),
            spy_name=text(query.get("spyName", ""), "spyName", MAX_LABEL_VALUE),
            format=query.get("format", "folded"),
        )


def parse_name(name: str) -> dict[str, str]:
    """`app.cpu{k=v,...}` as labels: the app name is the service label."""
    match = PYROSCOPE_NAME.fullmatch(name)
    if not match:
        raise PayloadError(f"bad name {name[:80]!r}: use app.cpu{{key=value,...}}")
    app, body = match.group(1), match.group(2) or ""
    for suffix in CPU_SUFFIXES:
        app = app.removesuffix(suffix)
    pairs: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise PayloadError(f"bad label {item[:80]!r} in name: use key=value")
        pairs[key.strip()] = value.strip()
    if app:
        pairs["service"] = app
    return labels(pairs, "name")


def span(query: Mapping[str, str]) -> tuple[float, float]:
    """from and until, unix seconds."""
    start, end = _time(query, "from"), _time(query, "until")
    if end < start:
        raise PayloadError(f"until ({end}) is before from ({start})")
    return start, end


def check_time(value: float, what: str) -> float:
    if not TIME_RANGE[0] <= value <= TIME_RANGE[1]:
        raise PayloadError(f"{what} is not a time in unix seconds")
    return value


def _time(query: Mapping[str, str], key: str) -> float:
    if key not in query:
        raise PayloadError(f"missing query parameter {key} (unix seconds)")
    return check_time(_number(query[key], key), f"{key}={query[key][:40]}")


def sample_rate(query: Mapping[str, str]) -> float:
    """sampleRate in Hz, Pyroscope's 100 when not given."""
    raw = query.get("sampleRate", "100")
    value = _number(raw, "sampleRate")
    if not 0 < value <= MAX_SAMPLE_RATE:
        raise PayloadError(f"sampleRate={raw[:40]} must be above 0 and at most 1000000 Hz")
    return value


def _number(raw: str, key: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise PayloadError(f"{key}={raw[:40]!r} is not a number") from None
    if not math.isfinite(value):
        raise PayloadError(f"{key} is not a finite number")
    return value
