"""FlameGraph folded stacks: one line per stack, `root;caller;leaf weight`.

Accepted variants: the frame annotations of stackcollapse-perf.pl and inferno
(`_[k]` kernel and `_[i]` inlined become Frame flags; `_[j]` JIT and `_[w]` waker
stay in the name, as flamegraph.pl shows them; all also without the underscore),
`module`function` frames from the DTrace collapsers (a backtick followed by a
number is a .NET generic's arity, `List`1.Add`, not a module), blank frames
(kept, as flamegraph.pl keeps them), fractional weights, and the differential
form `stack before after`, whose last count is taken. Lines that are not stacks
are skipped and named in the profile's warnings, as FlameGraph, inferno and
speedscope skip them; a file with no stack at all is refused. present/folded.py
writes the format.
"""

from __future__ import annotations

import re
from pathlib import Path

from perfsleuth.errors import UserError
from perfsleuth.formats import limits
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder

WEIGHT = re.compile(r"\d+(?:\.\d*)?")  # `6.` too, as C's printf("%#g") writes it
ANNOTATION = re.compile(r"_?\[(?P<kind>[ki])\]$")
# A backtick that starts a .NET generic arity (List`1.Add, Dictionary`2[...]).
ARITY = re.compile(r"`\d+(?![0-9A-Za-z_])")
# Line numbers named in the warning about skipped lines.
SHOWN_BAD_LINES = 5
# The title line of a GHC `+RTS -p` report (`prog.prof`): most of its lines end in two
# numbers, so they would read as differential folded stacks.
GHC_REPORT = "Time and Allocation Profiling Report"


def split_line(line: str) -> tuple[str, str] | None:
    """(stack, weight text) of one stripped folded line, or None when it is not one."""
    parts = line.rsplit(None, 1)
    if len(parts) != 2 or not WEIGHT.fullmatch(parts[1]):
        return None
    stack, weight = parts
    before = stack.rsplit(None, 1)
    if len(before) == 2 and WEIGHT.fullmatch(before[1]):
        stack = before[0]  # differential: `stack before after`
    return stack, weight


def sniff(head: bytes) -> bool:
    """True when most complete, non-comment lines of `head` look like `a;b;c 12`."""
    text = head.decode("utf-8", errors="replace")
    if GHC_REPORT in text[:4096]:
        return False
    lines = text.splitlines()
    if lines and not text.endswith("\n") and len(lines) > 1:
        lines.pop()  # cut off by the head's end
    lines = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    good = sum(split_line(ln) is not None for ln in lines)
    return good > 0 and good * 2 > len(lines)


def parse_frame(text: str) -> Frame:
    """One folded frame, its annotation turned into Frame flags."""
    kind = ""
    match = ANNOTATION.search(text)
    if match:
        kind = match["kind"]
        text = text[: match.start()]
    dso, function = _module(text)
    return Frame(function, dso=dso, inlined=kind == "i", kernel=kind == "k")


def _module(text: str) -> tuple[str, str]:
    """(module, function) of a DTrace `module`function` frame, else ("", text)."""
    tick = text.find("`")
    if tick <= 0 or ARITY.match(text, tick) or any(c in text[:tick] for c in " <(["):
        return "", text
    return text[:tick], text[tick + 1 :]


def read(path: str | Path) -> Profile:
    path = Path(path)
    reader = _Reader(path.name)
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            lines = limits.IOLines(f, path.name)
            for line in lines:
                reader.feed(line.strip(), lines.number)
    except OSError as e:
        raise UserError(f"{path.name}: cannot read ({e.strerror}); check the file") from e
    return reader.finish()


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.builder = ProfileBuilder(unit="samples", meta={"format": "folded"})
        self.frames: dict[str, Frame] = {}
        self.tally = limits.Tally(name)
        self.bad: list[tuple[int, str]] = []  # the first SHOWN_BAD_LINES of them
        self.bad_count = 0
        self.modules = False

    def feed(self, line: str, number: int) -> None:
        if not line or line.startswith("#"):
            return
        if GHC_REPORT in line and not self.builder.profile.stacks:
            raise UserError(
                f"{self.name}:{number}: a GHC profiling report, not folded stacks; turn it "
                "into folded stacks first (e.g. with ghc-prof-flamegraph)"
            )
        parts = split_line(line)
        if parts is None:
            self.bad_count += 1
            if len(self.bad) < SHOWN_BAD_LINES:
                self.bad.append((number, line[:80]))
            return
        where = f"{self.name}:{number}"
        names = parts[0].split(";")
        while names and not names[-1]:
            names.pop()  # a trailing `;` adds no frame (as Perl's split reads it)
        if len(names) > limits.MAX_DEPTH:
            raise UserError(f"{where}: a stack deeper than {limits.MAX_DEPTH} frames; refused")
        weight = limits.number(parts[1], where)
        count = max(1, round(weight))
        self.tally.add(count, where)
        stack = [self._frame(name) for name in reversed(names)]
        self.builder.add(stack, weight, count=count)

    def _frame(self, name: str) -> Frame:
        frame = self.frames.get(name)
        if frame is None:
            frame = self.frames[name] = parse_frame(name)
            self.modules = self.modules or bool(frame.dso)
        return frame

    def finish(self) -> Profile:
        profile = self.builder.build()
        if not profile.num_samples:
            if self.bad:
                number, line = self.bad[0]
                raise UserError(
                    f"{self.name}:{number}: expected `frame;frame;... count`, got "
                    f"{line!r}; no line of the file is a folded stack"
                )
            raise UserError(f"{self.name}: no stacks in the file; nothing to import")
        if self.modules:
            profile.meta["module_prefixes"] = True
        if self.bad:
            profile.meta.setdefault("warnings", []).append(self._skipped())
        return profile

    def _skipped(self) -> str:
        shown = ", ".join(str(n) for n, _ in self.bad)
        more = ", ..." if self.bad_count > len(self.bad) else ""
        return (
            f"{self.name}: skipped {self.bad_count} line(s) that are not "
            f"`frame;frame;... count` (line {shown}{more})"
        )
