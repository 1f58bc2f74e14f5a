"""`perf script` text output -> Profile.

The default layout of perf 6.1, with or without callchains:

    prog  9694/9694   474.110392:     500000 cpu-clock:ppp:
    \t            1217 heavy_leaf+0x27 (/tmp/ps/prog)
    \t            1092 main+0x32 (/tmp/ps/prog)
    <blank line>

or, without callchains, one line per sample with `ip sym+off (dso)` after the
event. The `pid/` part, the `[cpu]` column, the time and the period are
optional. Samples are aggregated while streaming (memory grows with distinct
stacks). Frames whose DSO is present on disk are re-symbolized through
perfsleuth.symbols (function from `sym+off` -> address -> inline chain and
file:line); otherwise perf's names are kept.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from ..binaries import build_id_paths, elf_info
from ..errors import NoSamples, UserError
from ..model.profile import Frame, Profile, ProfileBuilder, Thread
from ..model.timeline import Timeline
from ..symbols import Symbolizer, dso_name
from ..symbols.symbolizer import UNKNOWN, ElfSymbols, elf_symbols
from . import limits

# Possessive quantifiers and a comm that ends on a non-space keep matching linear
# in the line's length, whatever the line.
HEADER = re.compile(
    r"^\s*+(?P<comm>\S(?:.*?\S)?)\s++(?:(?P<pid>-?\d+)/)?(?P<tid>-?\d+)\s++"
    r"(?:\[(?P<cpu>\d+)\]\s++)?(?:(?P<time>\d+\.\d+):\s++)?"
    r"(?:(?P<period>\d+)\s++)?(?P<event>[^\s:][^\s]*?):(?:\s+(?P<rest>.*))?$"
)
# `@plt` names a PLT stub, not a symbol version: `gettimeofday@plt` stays itself.
_VERSION = re.compile(r"@@?(?!plt$)[A-Za-z0-9_.]+$")
_HEX = frozenset("0123456789abcdefABCDEF")
# Thread and process ids beyond this are not ids (the store keeps them as BIGINT).
MAX_ID = 2**32
# A run of text without a blank line longer than this is cut at a line end: samples
# without callchains are one line each, and a callchain this long is too deep anyway.
MAX_BLOCK = 64 << 20
NS_EVENTS = ("cpu-clock", "task-clock")

# A raw frame as perf printed it: (symbol, offset or -1, dso, address, kernel, inlined)
RawFrame = tuple[str, int, str, int, bool, bool]


def sniff(head: bytes) -> bool:
    """True when `head` starts like `perf script` output: after any comments (`--header`),
    a sample header line with a time or a frame, or followed by a frame line."""
    lines = [
        ln
        for ln in head.decode("utf-8", errors="replace").splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    m = HEADER.match(lines[0]) if lines else None
    if m is None:
        return False
    return bool(m["time"] or m["rest"]) or (len(lines) > 1 and is_frame_line(lines[1]))


def frame_parts(line: str) -> tuple[int, str, int, str] | None:
    """(address, symbol, offset or -1, dso) of a stripped `ip sym+off (dso)` line."""
    if not line.endswith(")"):
        return None
    start = line.rfind("(")
    if start < 1 or not line[start - 1].isspace():
        return None
    dso = line[start + 1 : -1]
    parts = line[:start].split(None, 1)
    if ")" in dso or not parts or not _is_hex(parts[0]):
        return None
    sym = parts[1].rstrip() if len(parts) > 1 else ""
    off = -1
    plus = sym.rfind("+0x")
    if plus >= 0 and _is_hex(sym[plus + 3 :]):
        sym, off = sym[:plus], int(sym[plus + 3 :], 16)
    return int(parts[0], 16), sym, off, dso


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in _HEX for c in text)


def is_frame_line(line: str) -> bool:
    """A callchain line, indented with a tab, spaces, or (old perf) not at all."""
    return frame_parts(line.strip()) is not None and HEADER.match(line) is None


def unit_for(event: str, has_period: bool) -> str:
    if not has_period:
        return "samples"
    base = event.split(":", 1)[0]
    return "ns" if base in NS_EVENTS else "events"


def _is_kernel(dso: str, addr: int) -> bool:
    return (
        dso.startswith("[kernel")
        or os.path.basename(dso).startswith("vmlinux")
        or (dso.startswith("[") and addr >= 0xFFFF800000000000)
    )


def _number(text: str, limit: int, what: str, line: str) -> int:
    """An integer field of a sample header, refused (naming the header) past `limit`."""
    value = int(text) if len(text) <= 20 else limit + 1  # no int() of a 5,000-digit text
    if abs(value) > limit:
        raise UserError(
            f"{what} {text[:24]} is out of range in the sample {line.strip()[:60]!r}; "
            "the file is corrupt"
        )
    return value


def _ids(m: re.Match, line: str) -> tuple[int, int]:
    """(pid, tid) of a header match; pid 0 when perf did not print it."""
    pid = _number(m["pid"], MAX_ID, "pid", line) if m["pid"] is not None else 0
    return pid, _number(m["tid"], MAX_ID, "tid", line)


def _check_depth(stack: tuple[int, ...] | list[int], name: str) -> None:
    if len(stack) > limits.MAX_DEPTH:
        raise UserError(
            f"{name}: a callchain deeper than {limits.MAX_DEPTH} frames; the file is corrupt"
        )


class _Aggregator:
    def __init__(self, name: str) -> None:
        self.name = name
        self.frames: list[RawFrame] = []
        self.frame_ids: dict[tuple[str, bool], int] = {}
        self.rows: dict[tuple[tuple[int, ...], str, int, int, str], list] = {}
        self.events: dict[str, int] = {}
        self.has_period = True
        self.samples = 0
        # (time text, row key) of each sample in the order read; None once a sample
        # has no time or takes the line-by-line parser (no partial time order)
        self.sampled: list[tuple[str, tuple]] | None = []

    def frame(self, line: str, leaf: bool) -> int | None:
        key = (line, leaf)
        fid = self.frame_ids.get(key)
        if fid is not None:
            return fid
        parts = frame_parts(line)
        if parts is None:
            return None
        addr, sym, off, dso = parts
        sym = sym or UNKNOWN
        inlined = dso == "inlined"
        raw = (sym, off, dso, addr, _is_kernel(dso, addr), inlined)
        fid = len(self.frames)
        self.frames.append(raw)
        self.frame_ids[key] = fid
        return fid

    def add(self, header: re.Match, stack: list[int]) -> None:
        _check_depth(stack, self.name)
        self.samples += 1
        event = header["event"]
        self.events[event] = self.events.get(event, 0) + 1
        period = header["period"]
        if period is None:
            self.has_period = False
        line = header.string
        weight = _number(period, limits.MAX_VALUE, "period", line) if period is not None else 1
        pid, tid = _ids(header, line)
        key = (tuple(stack), event, pid, tid, header["comm"])
        row = self.rows.get(key)
        if row is None:
            self.rows[key] = [weight, 1]
        else:
            row[0] += weight
            row[1] += 1


def _aggregate_lines(agg: _Aggregator, lines: Iterable[str], name: str) -> None:
    """The general, line-by-line parser (used for blocks the fast path does not take)."""
    agg.sampled = None
    header: re.Match | None = None
    stack: list[int] = []
    seen_any = agg.samples > 0
    for raw_line in lines:
        line = raw_line.rstrip("\n")
        if not line.strip():
            if header is not None:
                agg.add(header, stack)
                header, stack = None, []
            continue
        if line.startswith("#"):
            continue
        if header is not None and (line[0] == "\t" or is_frame_line(line)):
            fid = agg.frame(line.strip(), not stack)
            if fid is not None:
                stack.append(fid)
            continue
        m = HEADER.match(line)
        if m is None:
            if header is None and not seen_any:
                raise UserError(
                    f"{name}: not `perf script` output (cannot parse {line[:60]!r}); "
                    "give the output of `perf script` or a perf.data file"
                )
            continue
        if header is not None:
            agg.add(header, stack)
            stack = []
        seen_any = True
        header = m
        rest = m["rest"]
        if rest:
            fid = agg.frame(rest.strip(), True)
            if fid is not None:
                stack.append(fid)
    if header is not None:
        agg.add(header, stack)


# A parsed header, cached by the header text without its time and period:
# (event, pid, tid, comm, rest)
_Header = tuple[str, int, int, str, str]


def _header_key(line: str) -> tuple[str, int | None, str] | None:
    """(header without time and period, period, time) cheaply; None when unsure."""
    j = line.find(": ")
    if j < 0:
        return None
    k = line.rfind(" ", 0, j) + 1
    if "." not in line[k:j]:
        return None  # no time field: let the regex handle it
    suffix = line[j + 2 :].lstrip()
    tok, _, after = suffix.partition(" ")
    if tok.isdigit():
        return line[:k] + "|" + after, _number(tok, limits.MAX_VALUE, "period", line), line[k:j]
    return line[:k] + "|" + suffix, None, line[k:j]


def _blocks(source: Iterable[str] | IO[str], name: str) -> Iterator[str]:
    """Sample blocks (text between blank lines), read in large chunks, at most MAX_BLOCK."""
    read = getattr(source, "read", None)
    if read is None:
        buf: list[str] = []
        for line in source:  # type: ignore[union-attr]
            if line.strip():
                buf.append(line.rstrip("\n"))
            elif buf:
                yield "\n".join(buf)
                buf = []
        if buf:
            yield "\n".join(buf)
        return
    rest = ""
    while True:
        chunk = read(1 << 22)
        if not chunk:
            break
        parts = (rest + chunk).split("\n\n")
        rest = parts.pop()
        yield from parts
        if len(rest) > MAX_BLOCK:
            cut = rest.rfind("\n")
            if cut < 0:
                raise UserError(f"{name}: a line longer than {MAX_BLOCK >> 20} MiB; refused")
            yield rest[:cut]
            rest = rest[cut + 1 :]
    if rest:
        yield rest


def _aggregate(source: Iterable[str] | IO[str], name: str) -> _Aggregator:
    agg = _Aggregator(name)
    headers: dict[str, _Header] = {}
    chains: dict[str, tuple[int, ...]] = {}
    rows = agg.rows
    events = agg.events
    for block in _blocks(source, name):
        block = block.strip("\n")
        if not block:
            continue
        if block[0] == "#" or "\n#" in block:
            block = "\n".join(ln for ln in block.split("\n") if not ln.startswith("#"))
            if not block.strip():
                continue
        header, _, chain = block.partition("\n")
        if chain and chain[0] != "\t" and not is_frame_line(chain.partition("\n")[0]):
            # several samples without callchains in one block (callchain lines
            # start with a tab; headers may be right-aligned with spaces)
            lines = block.split("\n")
            if any(ln[:1] == "\t" for ln in lines):
                _aggregate_lines(agg, [*lines, ""], name)
                continue
            todo = [(ln, "") for ln in lines]
        else:
            todo = [(header, chain)]
        for head, body in todo:
            hk = _header_key(head)
            h = headers.get(hk[0]) if hk else None
            if h is None:
                m = HEADER.match(head) if hk else None
                if (
                    hk is None
                    or m is None
                    or m["period"] != (None if hk[1] is None else str(hk[1]))
                ):
                    _aggregate_lines(agg, [head, *body.split("\n"), ""], name)
                    continue
                pid, tid = _ids(m, head)
                h = (m["event"], pid, tid, m["comm"], (m["rest"] or "").strip())
                headers[hk[0]] = h
            event, pid, tid, comm, rest = h
            key = rest + "\n" + body if rest else body
            stack = chains.get(key)
            if stack is None:
                fids: list[int] = []
                for ln in ([rest] if rest else []) + body.split("\n"):
                    ln = ln.strip()
                    if ln:
                        fid = agg.frame(ln, not fids)
                        if fid is not None:
                            fids.append(fid)
                _check_depth(fids, name)
                stack = chains[key] = tuple(fids)
            period = hk[1] if hk else None
            if period is None:
                agg.has_period = False
                period = 1
            agg.samples += 1
            events[event] = events.get(event, 0) + 1
            rkey = (stack, event, pid, tid, comm)
            if agg.sampled is not None:
                if hk:
                    agg.sampled.append((hk[2], rkey))
                else:
                    agg.sampled = None
            row = rows.get(rkey)
            if row is None:
                rows[rkey] = [period, 1]
            else:
                row[0] += period
                row[1] += 1
    return agg


def _symtab(dso: str) -> ElfSymbols:
    """The fullest symbol table for a DSO: its own .symtab, else its debug file's
    (found by build-id: stripped system libraries keep local functions there)."""
    info = elf_info(dso)
    if info is not None and not info.has_symbols and info.build_id:
        for cand in build_id_paths(info.build_id):
            if os.path.isfile(cand):
                dbg = elf_info(cand)
                if dbg is not None and dbg.has_symbols:
                    return elf_symbols(cand)
    return elf_symbols(dso)


def _symbolize(
    agg: _Aggregator, symbolizer: Symbolizer | None, resymbolize: bool
) -> list[tuple[Frame, ...]]:
    """Frames for each raw frame: an inline chain, or () for dropped (inlined) lines."""
    sym = symbolizer or Symbolizer()
    queries: dict[int, tuple[str, int]] = {}
    exists: dict[str, bool] = {}
    leaf_ids = {fid for (_, leaf), fid in agg.frame_ids.items() if leaf}
    if resymbolize:
        for fid, (name, off, dso, _addr, kernel, inlined) in enumerate(agg.frames):
            if kernel or inlined or off < 0 or name == UNKNOWN or not dso.startswith("/"):
                continue
            if dso not in exists:
                exists[dso] = os.path.isfile(dso)
            if not exists[dso]:
                continue
            start = _symtab(dso).address_of(_VERSION.sub("", name))
            if start is None:
                continue
            # return addresses: step back into the call instruction
            vaddr = start + off if fid in leaf_ids or off == 0 else start + off - 1
            queries[fid] = (dso, vaddr)
    answers = sym.symbolize_vaddrs(set(queries.values())) if queries else {}
    out: list[tuple[Frame, ...]] = []
    for fid, (name, _off, dso, _addr, kernel, inlined) in enumerate(agg.frames):
        q = queries.get(fid)
        if q is not None and q in answers and answers[q][-1].function != UNKNOWN:
            out.append(answers[q])
            continue
        clean = _VERSION.sub("", name)
        if inlined:
            out.append((Frame(clean, dso="", inlined=True),))
        else:
            out.append((Frame(clean, dso=dso_name(dso) if dso else UNKNOWN, kernel=kernel),))
    return out


def build(
    lines: Iterable[str] | IO[str],
    name: str = "perf script",
    *,
    symbolizer: Symbolizer | None = None,
    resymbolize: bool = True,
    meta: dict | None = None,
) -> Profile:
    """Parse `perf script` lines into a Profile (see the module docs)."""
    agg = _aggregate(lines, name)
    if agg.samples == 0:
        raise NoSamples(f"{name}: no samples in the `perf script` output; record again")
    chains = _symbolize(agg, symbolizer, resymbolize)
    event = max(agg.events, key=lambda e: agg.events[e])
    unit = unit_for(event, agg.has_period)
    info = dict(meta or {})
    info.setdefault("source", "perf script")
    info["event"] = event
    info["events"] = sorted(agg.events)
    info["num_samples"] = sum(c for (_, ev, *_), (_, c) in agg.rows.items() if ev == event)
    if len(agg.events) > 1:
        info.setdefault("warnings", []).append(other_events_warning(name, agg.events, event))
    builder = ProfileBuilder(unit=unit, meta=info)
    # Map raw frame id -> interned frame ids; an inlined line is dropped when
    # the next (physical) frame was re-symbolized (it then carries its inlines).
    resolved: list[tuple[int, ...]] = [tuple(builder.frame_id(f) for f in c) for c in chains]
    placed: dict[tuple, tuple[int, int]] = {}  # row key -> (stack id, thread index)
    for rkey, (weight, count) in agg.rows.items():
        stack, ev, pid, tid, comm = rkey
        if ev != event:
            continue
        ids: list[int] = []
        for pos, fid in enumerate(stack):
            if agg.frames[fid][5]:  # a perf "(inlined)" line
                phys = next((f for f in stack[pos + 1 :] if not agg.frames[f][5]), None)
                if phys is not None and _was_resymbolized(chains[phys]):
                    continue  # the physical frame's chain already has its inlines
                # keep perf's inline frame, in the physical frame's DSO
                dso = chains[phys][-1].dso if phys is not None else ""
                ids.append(builder.frame_id(Frame(chains[fid][0].function, dso, inlined=True)))
                continue
            ids.extend(resolved[fid])
        thread = builder.thread_id(Thread(tid, pid, comm))
        builder.add_ids(tuple(ids), float(weight), count=count, thread_index=thread)
        placed[rkey] = (builder.stack_id(tuple(ids)), thread)
    profile = builder.build()
    if agg.sampled:
        profile.timeline = _timeline(agg.sampled, placed)
    return profile


def _timeline(sampled: list[tuple[str, tuple]], placed: dict[tuple, tuple[int, int]]) -> Timeline:
    """The kept event's samples in time order (perf script prints them in order, so
    the sort is one pass); times are seconds with up to 9 decimals, kept as ns."""
    timed = []
    for text, rkey in sampled:
        where = placed.get(rkey)
        if where is not None:
            seconds, _, fraction = text.partition(".")
            if not (seconds + fraction).isascii() or not (seconds + fraction).isdigit():
                return Timeline()  # not a time after all: no time order rather than a wrong one
            timed.append((int(seconds) * 10**9 + int(fraction[:9].ljust(9, "0")), where))
    timed.sort(key=lambda sample: sample[0])
    timeline = Timeline()
    for ns, (sid, thread) in timed:
        timeline.add(sid, thread, 1, ns)
    return timeline


def other_events_warning(name: str, events: dict[str, int], kept: str) -> str:
    """What a reader says when it keeps one event of several."""
    others = ", ".join(f"{e} ({n:,} samples)" for e, n in sorted(events.items()) if e != kept)
    return (
        f"{Path(name).name}: samples of {len(events)} events; kept {kept} "
        f"({events[kept]:,} samples), left out {others}; record one event per run"
    )


def _was_resymbolized(chain: tuple[Frame, ...]) -> bool:
    # Frames that came from llvm-symbolizer carry a source file or an inline chain.
    return len(chain) > 1 or bool(chain[-1].file)


def read_text(text: str, name: str = "perf script", **kw) -> Profile:
    return build(io.StringIO(text), name, **kw)


def read(path: str | Path, **kw) -> Profile:
    """Read a file of `perf script` output."""
    p = Path(path)
    try:
        if p.stat().st_size == 0:
            raise UserError(f"{p}: empty file; give the output of `perf script`")
        with open(p, encoding="utf-8", errors="replace") as f:
            return build(f, str(p), **kw)
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror}); check the path") from e
