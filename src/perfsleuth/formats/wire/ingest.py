"""What every pushed payload is checked against before it becomes a fleet Window.

The collector's decoders (window_pprof, pyroscope, otlp_profiles) read bytes from
the network: every size, count, depth and label is bounded here, and every refusal
is a PayloadError whose one-line message the collector sends back with a 400.
"""

from __future__ import annotations

import json
import math
import re
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsleuth.errors import UserError
from perfsleuth.formats.limits import parsed
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
DEFAULT_SAMPLE_RATE = 100.0
# Unix seconds from 2001 to 2100: anything else is a unit mistake (ms, ns) or garbage.
TIME_RANGE = (1e9, 4.1e9)
TIME_RANGE_SHOWN = "2001-2100 (unix seconds 1e9 to 4.1e9)"
# A time above the magnitude is in that unit: ns, us, ms (else seconds), as Pyroscope reads it.
TIME_UNITS = ((1e18, 1e9), (1e15, 1e6), (1e12, 1e3))
# `now`, `now-10s`, `now+1h` as Pyroscope's from/until take them (its attime: an offset
# without a unit is none)
# `now`, `now-10s`, `now-5m`, `now-1h30m`: Pyroscope's attime reads each unit by its
# first letters, in this order (`mon`/`M` month before `m` minute; no unit: 0).
NOW_UNIT = r"(?:[smhdwyM][a-z]{0,10})?"
NOW_PART = re.compile(rf"(\d{{1,9}})({NOW_UNIT})")
NOW = re.compile(rf"now(?:([-+])((?:\d{{1,9}}{NOW_UNIT}){{1,8}}))?")
NOW_UNITS: tuple[tuple[str, int], ...] = (("s", 1), ("mon", 2592000), ("M", 2592000))
NOW_UNITS += (("m", 60), ("h", 3600), ("d", 86400), ("w", 604800), ("y", 31536000))
CONTROL = re.compile(r"[\x00-\x1f]")

LABEL_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")
# Pyroscope's name: app name, then optional {k=v,...}.
PYROSCOPE_NAME = re.compile(r"([^{}]*)(?:\{([^{}]*)\})?")
# Labels Pyroscope clients send for themselves (`__name__`, `__session_id__`): not kept.
INTERNAL = "__"
# The profile-type suffix Pyroscope clients append to the app name (`app.cpu{...}`),
# as the type a text push (folded, lines) is stored as; Pyroscope's ingest adapter
# reads them the same way. A pprof or JFR push says its own types.
NAME_TYPES = {
    "cpu": "cpu",
    "itimer": "cpu",
    "wall": "wall",
    "alloc_objects": "alloc_objects",
    "alloc_space": "alloc_space",
    "inuse_objects": "inuse_objects",
    "inuse_space": "inuse_space",
    "goroutines": "goroutines",
    "mutex_count": "mutex_contentions",
    "mutex_duration": "mutex_delay",
    "block_count": "block_contentions",
    "block_duration": "block_delay",
    # async-profiler's Java lock events: monitor enters, as the JFR reader stores them
    "lock_count": "mutex_contentions",
    "lock_duration": "mutex_delay",
    "alloc_in_new_tlab_objects": "alloc_objects",
    "alloc_in_new_tlab_bytes": "alloc_space",
    "alloc_outside_tlab_objects": "alloc_objects",
    "alloc_outside_tlab_bytes": "alloc_space",
    "live": "inuse_objects",
}
# Types whose text values are samples taken at sampleRate, stored as time.
RATED_TYPES = ("cpu", "wall")


class PayloadError(UserError):
    """A pushed payload is refused; the message says what is wrong with it."""


class TooLarge(PayloadError):
    """A push's gzip data inflates past the limit given."""


def gunzip(data: bytes, limit: int = MAX_DECOMPRESSED, already: int = 0) -> bytes:
    """data, decompressed when it is gzip, refused when it takes the bytes inflated by the
    push (`already` before it) past `limit` (a bomb)."""
    if data[:2] != GZIP_MAGIC:
        return data
    inflater = zlib.decompressobj(wbits=31)
    room = max(limit - already, 0)
    try:
        out = inflater.decompress(data, room + 1)
    except zlib.error as e:
        raise PayloadError(f"broken gzip data ({e})") from e
    if len(out) > room:
        raise TooLarge(f"gzip data inflates past the limit of {limit >> 20} MB; refused")
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


class PushBudget:
    """What a push expands to, shared by the profiles it holds: frames of its samples,
    refused past MAX_PUSH_FRAMES; distinct frames decoded, past MAX_PUSH_NEW_FRAMES;
    bytes of gzip inflated, past the limit given."""

    def __init__(self, limit: int = MAX_DECOMPRESSED) -> None:
        self.limit = limit
        self.inflated = 0
        self.used = 0
        self.created = 0

    def gunzip(self, data: bytes) -> bytes:
        out = gunzip(data, self.limit, self.inflated)
        if out is not data:
            self.inflated += len(out)
        return out

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


def part_id(window_id: str, n: int) -> str:
    """The id of part n of a push split into windows by their samples' labels: the push's
    own id for the first, `id.n` for the others."""
    return window_id if n == 0 else f"{window_id}.{n}"


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
    format: str = ""  # "" when the push does not say: pyroscope.decode tells by the body
    name_type: str = "cpu"  # the type the name's suffix says (NAME_TYPES): a text push's
    # Which lock profile a pprof's contentions/delay types are: Go's "mutex" or "block".
    lock: str = "mutex"
    # The pprof sample types (alloc_space, contentions, ...) the push says are cumulative
    # (totals since the process started): the collector stores their deltas.
    cumulative: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, query: Mapping[str, str], window_id: str) -> IngestParams:
        """Pyroscope's name, from, until, sampleRate, spyName and format; without from and
        until a pprof's own time_nanos and duration_nanos are read (Pyroscope takes now)."""
        if "name" not in query:
            raise PayloadError("missing query parameter name (e.g. name=myapp.cpu{env=prod})")
        start, end = span(query) if "from" in query or "until" in query else (None, None)
        name_type, name_labels = parse_name(query["name"])
        return cls(
            window_id=window_id,
            start=start,
            end=end,
            labels=name_labels,
            name_type=name_type,
            sample_rate=sample_rate(query),
            spy_name=text(query.get("spyName", ""), "spyName", MAX_LABEL_VALUE),
            format=query.get("format", ""),
        )


def parse_name(name: str) -> tuple[str, dict[str, str]]:
    """`app.alloc_space{k=v,...}` as the type its suffix says (NAME_TYPES; cpu without
    one) and labels: the app name without the suffix is the service label."""
    match = PYROSCOPE_NAME.fullmatch(name)
    if not match:
        raise PayloadError(f"bad name {name[:80]!r}: use app.cpu{{key=value,...}}")
    app, body = match.group(1), match.group(2) or ""
    stem, dot, suffix = app.rpartition(".")
    name_type = NAME_TYPES.get(suffix, "cpu") if dot else "cpu"
    if dot and suffix in NAME_TYPES:
        app = stem
    pairs: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise PayloadError(f"bad label {item[:80]!r} in name: use key=value")
        if not key.strip().startswith(INTERNAL):
            pairs[key.strip()] = value.strip()
    if app:
        pairs["service"] = app
    return name_type, labels(pairs, "name")


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
    """Unix time in s, ms, us or ns, told apart by magnitude as Pyroscope does, or now
    and an offset (NOW)."""
    if key not in query:
        raise PayloadError(f"missing query parameter {key} (unix seconds)")
    relative = NOW.fullmatch(query[key].strip())
    if relative:
        sign, parts = relative.groups()
        offset = sum(
            int(amount) * next((n for prefix, n in NOW_UNITS if unit.startswith(prefix)), 0)
            for amount, unit in NOW_PART.findall(parts or "")
        )
        return time.time() + (-offset if sign == "-" else offset)
    value = _finite(query[key], key)
    for magnitude, per_second in TIME_UNITS:
        if value > magnitude:
            value /= per_second
            break
    return check_time(value, f"{key}={query[key][:40]}")


def sample_rate(query: Mapping[str, str]) -> float:
    """sampleRate in Hz, Pyroscope's 100 when not given or 0 (the Go SDK's heap, lock
    and goroutine pushes)."""
    raw = query.get("sampleRate", "100")
    value = _finite(raw, "sampleRate") or DEFAULT_SAMPLE_RATE
    if not 0 < value <= MAX_SAMPLE_RATE:
        raise PayloadError(f"sampleRate={raw[:40]} must be above 0 and at most 1000000 Hz")
    return value


def _finite(raw: str, key: str) -> float:
    value = parsed(raw, key, PayloadError)
    if not math.isfinite(value):
        raise PayloadError(f"{key} is not a finite number")
    return value
