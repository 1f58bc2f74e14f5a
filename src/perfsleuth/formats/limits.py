"""What every reader accepts: file types, sizes, line lengths, stack depths and values.

Readers stream their input line by line or in bounded chunks and refuse, with the
line or field named, anything past these limits: no input makes a reader run in more
than linear time or hold more than the limits below (or the decompressed-size limit)
in memory at once.
"""

from __future__ import annotations

import math
import os
import stat
import zlib
from pathlib import Path
from typing import IO

from perfsleuth.errors import UserError

# Longest text line a reader holds (a folded stack of ~10,000 deep C++ frames fits).
MAX_LINE = 4 << 20
# Deepest stack a reader keeps (perf caps at 127 by default, eu-stack at 2,048).
MAX_DEPTH = 65536
# Largest single value (count, weight, cost): doubles hold integers exactly up to here.
MAX_VALUE = 2**53
# Largest sum of sample counts the run store's BIGINT columns hold.
MAX_TOTAL = 2**63 - 1
# Decompressed (or whole-file, for readers that need it whole) size, in MiB.
MAX_INPUT_ENV = "PERFSLEUTH_MAX_INPUT_MB"
DEFAULT_MAX_INPUT_MB = 1024
GZIP_MAGIC = b"\x1f\x8b"


def max_input_bytes(mb: float | None = None) -> int:
    """The size limit in bytes: `mb` if given, else $PERFSLEUTH_MAX_INPUT_MB, else 1 GiB."""
    if mb is None:
        raw = os.environ.get(MAX_INPUT_ENV, "")
        try:
            mb = float(raw) if raw else DEFAULT_MAX_INPUT_MB
        except ValueError:
            raise UserError(f"{MAX_INPUT_ENV}={raw[:20]!r} is not a number of MB") from None
    if not math.isfinite(mb) or mb <= 0:
        raise UserError(f"the input size limit must be a positive number of MB, not {mb}")
    return int(mb * (1 << 20))


def too_big(name: str, limit: int, what: str = "decompressed") -> UserError:
    mb = limit / (1 << 20)
    return UserError(
        f"{name}: larger than {mb:g} MB {what}, the input size limit; raise it with "
        f"`import --max-size MB` or {MAX_INPUT_ENV} if the file is genuine"
    )


def check_regular(path: Path) -> None:
    """Refuse anything but a regular file: a FIFO or a device would block or never end."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as e:
        raise UserError(f"{path}: no such file; check the path") from e
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror}); check the path") from e
    if stat.S_ISDIR(mode):
        raise UserError(f"{path}: is a directory; pass a profile file")
    if not stat.S_ISREG(mode):
        raise UserError(
            f"{path}: not a regular file (a pipe, socket or device); save the profile to "
            "a file first, or pipe it to `perfsleuth import -`"
        )


def read_bytes(path: Path, limit: int) -> bytes:
    """The whole file, gunzipped if it is gzip-compressed, refused past `limit` bytes."""
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise UserError(f"{path.name}: cannot read ({e.strerror}); check the file") from e
    if len(data) > limit:
        raise too_big(path.name, limit, "on disk")
    return gunzip(data, path.name, limit) if data[:2] == GZIP_MAGIC else data


def gunzip(data: bytes, name: str, limit: int) -> bytes:
    """`data` decompressed (several gzip members too), never more than `limit` bytes."""
    out = bytearray()
    while data[:2] == GZIP_MAGIC:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(data, limit + 1 - len(out))
        except zlib.error as e:
            raise UserError(f"{name}: broken gzip data ({e}); the file is corrupt") from e
        if len(out) > limit:
            raise too_big(name, limit)
        if not inflater.eof:
            raise UserError(f"{name}: broken gzip data (it ends early); the file is truncated")
        data = inflater.unused_data
    return bytes(out)


class IOLines:
    """The lines of a text file, each refused past MAX_LINE characters (with its number)."""

    def __init__(self, f: IO[str], name: str) -> None:
        self.f = f
        self.name = name
        self.number = 0

    def __iter__(self) -> IOLines:
        return self

    def __next__(self) -> str:
        try:
            line = self.f.readline(MAX_LINE + 1)
        except OSError as e:
            raise UserError(f"{self.name}: cannot read ({e.strerror}); check the file") from e
        if not line:
            raise StopIteration
        self.number += 1
        if len(line) > MAX_LINE and not line.endswith("\n"):
            raise UserError(
                f"{self.name}:{self.number}: line longer than {MAX_LINE >> 20} MiB; "
                "this is not a profile a reader accepts"
            )
        return line


def number(text: str, where: str) -> float:
    """A count or weight as text: finite, not negative, at most MAX_VALUE."""
    return checked(parsed(text, where), where)


def parsed(text: str, where: str, error: type[UserError] = UserError) -> float:
    """TEXT as a float; else ERROR, saying so of WHERE."""
    try:
        return float(text)
    except ValueError:
        raise error(f"{where}: {text[:40]!r} is not a number") from None


def checked(value: float, where: str) -> float:
    """`value` when it is finite, not negative and at most MAX_VALUE; else a UserError."""
    if not math.isfinite(value) or value < 0 or value > MAX_VALUE:
        shown = f"{value:.6g}" if math.isfinite(value) else "not finite"
        raise UserError(f"{where}: value {shown} is out of range (0 to 2^53); the file is corrupt")
    return value


class Tally:
    """The running sum of sample counts, refused before it overflows the run store."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.total = 0

    def add(self, count: int, where: str) -> None:
        self.total += count
        if self.total > MAX_TOTAL:
            raise UserError(f"{where}: the sample counts add up past 2^63; the file is corrupt")
