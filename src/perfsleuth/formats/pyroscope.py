"""Pyroscope's /ingest bodies: folded stacks (`a;b;c N`, root first) or pprof.

A pprof body comes raw or, as Pyroscope's Go client sends it, as multipart/form-data
whose `profile` part holds the (gzipped) profile. The query parameters (name, from,
until, sampleRate, spyName) are parsed by ingest.IngestParams.
"""

from __future__ import annotations

from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP

from perfsleuth.formats import ingest, window_pprof
from perfsleuth.formats.ingest import IngestParams, PayloadError
from perfsleuth.model.fleet import Window
from perfsleuth.model.profile import Frame, ProfileBuilder

FORMATS = ("folded", "pprof")
MAX_COUNT_DIGITS = 16


def decode(
    body: bytes, params: IngestParams, content_type: str, limit: int = ingest.MAX_DECOMPRESSED
) -> list[Window]:
    """The Windows a Pyroscope client pushed; PayloadError when it is refused."""
    if params.format == "pprof":
        return window_pprof.decode(_profile_part(body, content_type), params, limit)
    if params.format != "folded":
        raise PayloadError(f"format={params.format[:40]} is not supported: use folded or pprof")
    return [_folded(ingest.gunzip(body, limit), params)]


def _folded(body: bytes, params: IngestParams) -> Window:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PayloadError(f"folded stacks are not UTF-8 (byte {e.start})") from None
    builder = ProfileBuilder(unit="samples", meta={"format": "folded", "spy": params.spy_name})
    frames = _Frames()
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            stack, count = _folded_line(line, number)
            frames.budget.spend(len(stack))
            builder.add([frames.get(name, number) for name in reversed(stack)], count, count=count)
    assert params.start is not None and params.end is not None  # parse() requires them
    return Window(
        id=params.window_id,
        start=params.start,
        end=params.end,
        profile=builder.build(),
        labels=dict(params.labels),
        rate_hz=params.sample_rate,
    )


class _Frames:
    """One Frame per distinct name, each name checked once."""

    def __init__(self) -> None:
        self.by_name: dict[str, Frame] = {}
        self.budget = ingest.FrameBudget()

    def get(self, name: str, number: int) -> Frame:
        frame = self.by_name.get(name)
        if frame is None:
            ingest.text(name, f"folded line {number}: a frame")
            self.budget.create(1)
            frame = self.by_name[name] = Frame(name)
        return frame


def _folded_line(line: str, number: int) -> tuple[list[str], int]:
    stack, _, raw = line.rstrip().rpartition(" ")
    if not stack:
        raise PayloadError(f"folded line {number}: expected `frame;frame;... COUNT`")
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_COUNT_DIGITS:
        raise PayloadError(
            f"folded line {number}: the count {raw[:20]!r} is not a whole number of at most "
            f"{MAX_COUNT_DIGITS} digits"
        )
    if ingest.CONTROL.search(stack):
        raise PayloadError(f"folded line {number}: a frame holds control characters")
    names = stack.split(";")
    if len(names) > ingest.MAX_STACK_DEPTH:
        raise PayloadError(f"folded line {number}: deeper than {ingest.MAX_STACK_DEPTH} frames")
    return names, ingest.count(int(raw), f"folded line {number}: the count")


def _profile_part(body: bytes, content_type: str) -> bytes:
    """The pprof bytes of a raw body, or of the `profile` part of a multipart form."""
    if not content_type.startswith("multipart/form-data"):
        return body
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace")
    form = BytesParser(policy=HTTP).parsebytes(head + body)
    for part in form.iter_parts() if form.is_multipart() else ():
        if (
            isinstance(part, Message)
            and part.get_param("name", header="content-disposition") == "profile"
        ):
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                return payload
    raise PayloadError("multipart body without a `profile` part holding the pprof")
