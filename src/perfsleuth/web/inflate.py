"""The Content-Encodings a request body may come in, each inflated piece by piece.

read_body (web/app.py) feeds a body's pieces as they arrive to its encoding's inflater
and asks each step for at most a bounded number of bytes, so that a bomb stops at the
limit. gzip, deflate and zlib are zlib's; zstd is pyzstd's; the OpenTelemetry
Collector's exporters also send snappy (cramjam) and lz4 (lz4's frame decompressor).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import cramjam
import lz4.frame
import pyzstd


class InflatesPast(Exception):
    """A body that says it inflates past the limit (a snappy block names its size)."""


class Broken(Exception):
    """A body that is not in its encoding."""


class Inflater:
    """What read_body asks of an inflater: `step` returns at most `max_length` bytes of
    what `data` and what it held back inflate to; `held` when it holds more; `ended` at
    the end of its stream (what follows is ignored); `whole` when what it read ends where
    its stream may end; `close` once the body is over."""

    errors: tuple[type[Exception], ...] = (Broken,)

    def step(self, data: bytes, max_length: int) -> bytes:
        raise NotImplementedError

    @property
    def held(self) -> bool:
        raise NotImplementedError

    @property
    def ended(self) -> bool:
        return False

    @property
    def whole(self) -> bool:
        return self.ended

    def close(self) -> None:
        """The body is over."""


class Zlib(Inflater):
    """A gzip or zlib stream: what `max_length` held back is kept for the next steps."""

    errors = (zlib.error,)

    def __init__(self, wbits: int) -> None:
        self.inner = zlib.decompressobj(wbits=wbits)

    def step(self, data: bytes, max_length: int) -> bytes:
        return self.inner.decompress(self.inner.unconsumed_tail + data, max_length)

    @property
    def held(self) -> bool:
        return bool(self.inner.unconsumed_tail)

    @property
    def ended(self) -> bool:
        return self.inner.eof


class Streaming(Inflater):
    """A decompressor object of the bz2/lzma kind: `decompress(data, max_length)`, with
    `needs_input` false while it holds back output."""

    inner: pyzstd.EndlessZstdDecompressor | lz4.frame.LZ4FrameDecompressor

    def step(self, data: bytes, max_length: int) -> bytes:
        return self.inner.decompress(data, max_length)

    @property
    def held(self) -> bool:
        return not self.inner.needs_input


class Zstd(Streaming):
    """A zstd stream: one or more frames."""

    errors = (pyzstd.ZstdError,)
    inner: pyzstd.EndlessZstdDecompressor

    def __init__(self) -> None:
        self.inner = pyzstd.EndlessZstdDecompressor()

    @property
    def whole(self) -> bool:  # frames may follow frames: the last one whole
        return self.inner.at_frame_edge


class Lz4(Streaming):
    """An LZ4 frame (what the OpenTelemetry Collector's `lz4` compression writes)."""

    errors = (RuntimeError,)  # lz4.frame's "LZ4F_decompress failed ..."
    inner: lz4.frame.LZ4FrameDecompressor

    def __init__(self) -> None:
        self.inner = lz4.frame.LZ4FrameDecompressor()

    @property
    def ended(self) -> bool:
        return self.inner.eof


# The first chunk of snappy's framing format: its stream identifier.
SNAPPY_STREAM = b"\xff\x06\x00\x00sNaPpY"
SNAPPY_CHUNK = 1 << 16  # a chunk's data inflates to at most this many bytes
# Chunk types of the framing format: data compressed or not (each after a CRC-32C),
# 0x02-0x7f reserved (refused), 0x80-0xfd reserved skippable, 0xfe padding.
SNAPPY_DATA = (0x00, 0x01)
SNAPPY_SKIPPABLE = 0x80


class Snappy(Inflater):
    """Snappy as the OpenTelemetry Collector sends it: `snappy` one raw block (older
    Collectors sent the framing format under that name: told apart by its stream
    identifier, as the Collector's own receiver does), `x-snappy-framed` the framing
    format. A framed
    stream is inflated chunk by chunk (each at most 64 KiB, its CRC checked by cramjam);
    a block once the body is over, if the size it names is within the limit."""

    errors = (cramjam.DecompressionError, Broken)

    def __init__(self, limit: int, framed: bool | None = None) -> None:
        self.limit = limit
        self.framed = framed
        self.pending = bytearray()  # what has arrived, not yet inflated
        self.out = bytearray()  # inflated, not yet returned
        self.started = False  # the framed stream's identifier was read
        self.closed = False
        self.done = False  # the block was inflated

    def step(self, data: bytes, max_length: int) -> bytes:
        self.pending += data
        if self.framed is None and (len(self.pending) >= len(SNAPPY_STREAM) or self.closed):
            self.framed = self.pending.startswith(SNAPPY_STREAM)
        if self.framed:
            while len(self.out) < max_length and (chunk := self._chunk()) is not None:
                self.out += chunk
        elif self.closed and not self.done:
            self.out += self._block()
        out = bytes(self.out[:max_length])
        del self.out[:max_length]
        return out

    @property
    def held(self) -> bool:
        if self.out:
            return True
        if self.framed:
            return self._chunk_size() is not None
        return self.closed and not self.done

    @property
    def whole(self) -> bool:
        return self.started and not self.pending if self.framed else self.done

    def close(self) -> None:
        self.closed = True

    def _chunk_size(self) -> int | None:
        """The bytes of the next chunk, header included, once it has all arrived."""
        if len(self.pending) < 4:
            return None
        size = 4 + int.from_bytes(self.pending[1:4], "little")
        return size if len(self.pending) >= size else None

    def _chunk(self) -> bytes | None:
        """What the next whole chunk inflates to; None until it has arrived."""
        if (
            not self.started
            and self.pending[: len(SNAPPY_STREAM)] != SNAPPY_STREAM[: len(self.pending)]
        ):
            raise Broken("the framed stream does not start with its identifier")
        size = self._chunk_size()
        if size is None:
            return None
        chunk = bytes(self.pending[:size])
        del self.pending[:size]
        kind = chunk[0]
        if chunk == SNAPPY_STREAM:
            self.started = True
            return b""
        if kind in SNAPPY_DATA:
            if kind == 0x00 and cramjam.snappy.decompress_raw_len(chunk[8:]) > SNAPPY_CHUNK:
                raise Broken(f"a chunk inflates past {SNAPPY_CHUNK} bytes")
            return bytes(cramjam.snappy.decompress(SNAPPY_STREAM + chunk))
        if kind < SNAPPY_SKIPPABLE:
            raise Broken(f"reserved chunk type {kind:#x}")
        return b""

    def _block(self) -> bytes:
        block = bytes(self.pending)
        self.pending.clear()
        self.done = True
        if cramjam.snappy.decompress_raw_len(block) > self.limit:
            raise InflatesPast(f"the block says it inflates to more than {self.limit} bytes")
        return bytes(cramjam.snappy.decompress_raw(block))


# Content-Encoding -> its inflater, given the limit. HTTP's deflate is the zlib format
# (RFC 9110), as the OpenTelemetry Collector's `deflate` and `zlib` compressions send.
INFLATERS: dict[str, Callable[[int], Inflater]] = {
    "gzip": lambda limit: Zlib(31),
    "deflate": lambda limit: Zlib(15),
    "zlib": lambda limit: Zlib(15),
    "zstd": lambda limit: Zstd(),
    "lz4": lambda limit: Lz4(),
    "snappy": Snappy,
    "x-snappy-framed": lambda limit: Snappy(limit, framed=True),
}
