"""FlameGraph folded stacks: one line per stack, `root;caller;leaf weight`.

Accepted variants: the frame annotations of stackcollapse-perf.pl and inferno
(`_[k]` kernel, `_[i]` inlined, `_[j]` JIT, `_[w]` waker, also without the
underscore), `module`function` frames from the DTrace collapsers, and the
differential form `stack before after`, whose last count is taken. present/folded.py
writes the format.
"""

from __future__ import annotations

import re
from pathlib import Path

from perfsleuth.errors import UserError
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder

LINE = re.compile(r"^(?P<stack>\S.*?)\s+(?:\d+(?:\.\d+)?\s+)?(?P<weight>\d+(?:\.\d+)?)$")
ANNOTATION = re.compile(r"_?\[(?P<kind>[kijw])\]$")


def sniff(head: bytes) -> bool:
    """True when every complete, non-comment line of `head` looks like `a;b;c 12`."""
    text = head.decode("utf-8", errors="replace")
    lines = text.splitlines()
    if lines and not text.endswith("\n") and len(lines) > 1:
        lines.pop()  # cut off by the 4 KiB head
    lines = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    return bool(lines) and all(LINE.match(ln) for ln in lines)


def parse_frame(text: str) -> Frame:
    """One folded frame, its annotation turned into Frame flags."""
    kind = ""
    match = ANNOTATION.search(text)
    if match:
        kind = match["kind"]
        text = text[: match.start()]
    dso, sep, function = text.partition("`")
    if not sep:
        dso, function = "", text
    return Frame(function, dso=dso, inlined=kind == "i", kernel=kind == "k")


def read(path: str | Path) -> Profile:
    path = Path(path)
    builder = ProfileBuilder(unit="samples", meta={"format": "folded"})
    frames: dict[str, Frame] = {}
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            match = LINE.match(line)
            if match is None:
                raise UserError(
                    f"{path.name}:{number}: expected `frame;frame;... count`, got {line[:80]!r};"
                    " pass a file in FlameGraph folded format"
                )
            stack = [_cached(frames, name) for name in match["stack"].split(";") if name]
            weight = float(match["weight"])
            builder.add(stack[::-1], weight, count=max(1, round(weight)))
    return builder.build()


def _cached(frames: dict[str, Frame], name: str) -> Frame:
    frame = frames.get(name)
    if frame is None:
        frame = frames[name] = parse_frame(name)
    return frame
