"""The flame graph's tree: every stack merged root first, a node per distinct path."""

from __future__ import annotations

from ..formats.py_spy import is_python_frame
from ..model.profile import Frame, Profile

KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"
# a Python function (py-spy): never merged with a native function of the same name
PYTHON_SUFFIX = "_[py]"


def frame_label(frame: Frame) -> str:
    if frame.kernel:
        return frame.function + KERNEL_SUFFIX
    if frame.inlined:
        return frame.function + INLINE_SUFFIX
    if is_python_frame(frame):
        return frame.function + PYTHON_SUFFIX
    return frame.function


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
