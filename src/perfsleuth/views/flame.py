"""Flame graphs: folded stacks (FlameGraph / inferno format) and one self-contained HTML file."""

from __future__ import annotations

import json
from html import escape as html_escape
from importlib import resources
from typing import TextIO

from ..model.profile import Frame, Profile

KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"


def frame_label(frame: Frame) -> str:
    if frame.kernel:
        return frame.function + KERNEL_SUFFIX
    if frame.inlined:
        return frame.function + INLINE_SUFFIX
    return frame.function


def folded_lines(profile: Profile) -> list[str]:
    """One `root;...;leaf weight` line per distinct stack, sorted."""
    labels = [frame_label(f).replace(";", ":") for f in profile.frames]
    weights: dict[int, float] = {}
    for sid, w in zip(profile.sample_stack, profile.sample_weight, strict=True):
        weights[sid] = weights.get(sid, 0.0) + w
    lines = []
    for sid, w in weights.items():
        stack = profile.stacks[sid]
        if stack and w:
            lines.append(f"{';'.join(labels[f] for f in reversed(stack))} {round(w)}")
    lines.sort()
    return lines


def write_folded(profile: Profile, fh: TextIO) -> None:
    for line in folded_lines(profile):
        fh.write(line + "\n")


def tree(profile: Profile) -> dict:
    """Nested {"n": name, "v": total weight, "s": self weight, "c": [...]}, root first."""
    root: dict = {"n": "all", "v": 0.0, "s": 0.0, "c": {}}
    labels = [frame_label(f) for f in profile.frames]
    for sid, w in zip(profile.sample_stack, profile.sample_weight, strict=True):
        node = root
        node["v"] += w
        for fid in reversed(profile.stacks[sid]):
            child = node["c"].get(labels[fid])
            if child is None:
                child = node["c"][labels[fid]] = {"n": labels[fid], "v": 0.0, "s": 0.0, "c": {}}
            child["v"] += w
            node = child
        node["s"] += w
    return _listify(root)


def _listify(node: dict) -> dict:
    children = sorted(node["c"].values(), key=lambda c: c["n"])
    out = {"n": node["n"], "v": node["v"], "s": node["s"]}
    if children:
        out["c"] = [_listify(c) for c in children]
    return out


def html(profile: Profile, title: str) -> str:
    """A self-contained page (no network) with a canvas flame graph: zoom and search."""
    template = resources.files(__package__).joinpath("flame.html").read_text(encoding="utf-8")
    data = json.dumps({"title": title, "unit": profile.unit, "root": tree(profile)})
    # The JSON sits inside <script>: keep "</script>" in a symbol name from closing it.
    data = data.replace("</", "<\\/")
    return template.replace("/*DATA*/null", data).replace("{{TITLE}}", _escape(title))


def _escape(text: str) -> str:
    return html_escape(text, quote=True)
