"""Profile readers, one format per module (writers are outputs: see present/).

Three kinds of format, each kind in its own package, each module one format:
- here, the files `perfsleuth import` reads (READERS below): perf_data, pprof, callgrind,
  speedscope, perf_script, py_spy, folded, with their helpers limits and read_position, and
  pprof_message (a pprof message from a Profile) for present/pprof.py and wire.window_pprof;
- tool_output/: the output of the tools the recorders run (perf_samples, perf_switches,
  bpftrace_stacks, eu_stack, wallsnap, py_spy_trace, counts) and python_splice, which joins
  two;
- wire/: the fleet's wire formats, what a push carries (window_pprof, pyroscope,
  pyroscope_push, otlp_profiles), with ingest (the checks every push passes).

READERS names every format `perfsleuth import` reads, in sniffing order, with the
description its help and errors show. Every reader module has `sniff(head: bytes) -> bool`,
which recognises the format from the first bytes of a file (gunzipped when the file is
gzip-compressed), and `read(path) -> Profile`. `detect` asks them in that order.
"""

from __future__ import annotations

import importlib
import zlib
from pathlib import Path
from types import ModuleType

from perfsleuth.errors import UserError
from perfsleuth.formats import limits
from perfsleuth.model.profile import Profile

# Sniffing order: the most specific formats first, the loose text ones last.
READERS = {
    "perf_data": "perf.data",
    "pprof": "pprof profile.proto (plain or gzipped)",
    "callgrind": "callgrind/cachegrind out",
    "speedscope": "speedscope JSON",
    "perf_script": "perf script text",
    "py_spy": "py-spy raw (Python frames mixed with native)",
    "folded": "FlameGraph folded stacks",
}
FORMATS = tuple(READERS)
WHOLE = ("pprof", "speedscope")  # the readers that need their input whole, bounded
DESCRIPTIONS = ", ".join(READERS.values())
# Enough for `perf script --header`'s comment block; extended up to limits.MAX_LINE
# until the head holds one complete line that is not a comment.
HEAD_SIZE = 1 << 16


def module(name: str) -> ModuleType:
    """The reader module for a format name from FORMATS."""
    if name not in FORMATS:
        raise UserError(f"unknown format {name!r}; use one of: {', '.join(FORMATS)}")
    return importlib.import_module(f"{__name__}.{name}")


def read_head(path: str | Path) -> bytes:
    """The first bytes of a regular file (gunzipped if gzip-compressed): HEAD_SIZE, or
    more when that does not hold a whole line of text that is not a comment."""
    p = Path(path)
    limits.check_regular(p)
    try:
        with p.open("rb") as f:
            head = f.read(HEAD_SIZE)
            while len(head) < limits.MAX_LINE and not _has_text_line(head):
                more = f.read(HEAD_SIZE)
                if not more:
                    break
                head += more
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror}); check the file") from e
    if not head:
        raise UserError(f"{p.name}: the file is empty; record or export the profile again")
    if head[:2] == limits.GZIP_MAGIC:
        return _gunzip_head(p)
    return head


def _has_text_line(head: bytes) -> bool:
    complete = head[: head.rfind(b"\n") + 1]
    return any(ln.strip() and not ln.startswith(b"#") for ln in complete.split(b"\n"))


def _gunzip_head(p: Path) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = b""
    try:
        with p.open("rb") as f:
            while len(out) < HEAD_SIZE and (chunk := f.read(HEAD_SIZE)):
                out += inflater.decompress(chunk, HEAD_SIZE - len(out))
    except zlib.error as e:
        raise UserError(f"{p.name}: broken gzip data ({e}); the file is corrupt") from e
    return out


def detect(path: str | Path) -> ModuleType:
    """The reader module for the file at `path`, recognised by its content."""
    p = Path(path)
    head = read_head(p)
    for mod in map(module, FORMATS):
        if mod.sniff(head):
            if _is_gzipped(p) and mod.__name__.rsplit(".", 1)[-1] not in WHOLE:
                raise UserError(f"{p.name}: gzip-compressed; decompress it with gunzip first")
            return mod
    raise UserError(f"{p.name}: not a profile format perfsleuth reads; supported: {DESCRIPTIONS}")


def _is_gzipped(p: Path) -> bool:
    with p.open("rb") as f:
        return f.read(2) == limits.GZIP_MAGIC


def read_any(
    path: str | Path, fmt: str | None = None, *, max_bytes: int | None = None
) -> tuple[Profile, str]:
    """Read a profile (of format `fmt`, else detected); returns it with the format's name.

    `max_bytes` bounds what a reader decompresses or holds whole (default:
    limits.max_input_bytes()). A profile without samples, weight or stacks is refused.
    """
    read_head(path)  # a missing, empty or special file is the user's error whatever the format
    mod = module(fmt) if fmt else detect(path)
    name = mod.__name__.rsplit(".", 1)[-1]
    if name in WHOLE:
        profile = mod.read(path, max_bytes=max_bytes or limits.max_input_bytes())
    else:
        profile = mod.read(path)
    check_useful(profile, Path(path).name, READERS[name])
    return profile, name


def check_useful(profile: Profile, name: str, description: str) -> None:
    """A profile without samples, weight or stacks is the user's error."""
    if not profile.num_samples:
        raise UserError(f"{name}: no samples in this {description}; nothing to import")
    if not profile.total:
        raise UserError(f"{name}: every sample has weight 0; nothing to import")
    if not any(profile.stacks[sid] for sid in profile.sample_stack):
        raise UserError(
            f"{name}: read as {description}, but no sample has a stack; "
            "this is not a profile perfsleuth reads"
        )
