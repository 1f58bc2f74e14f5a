"""A pprof Profile message built from a model Profile's stacks.

The string table, functions, locations (an inlined frame joins its caller's location as
one more Line, innermost first, as formats/pprof.py reads them back) and mappings (with
the build-ids the profile knows; an unsymbolized frame's location has its address, in a
mapping of its build-id that starts at 0, so the address is the ELF's own: see
model.profile.Frame). The pprof export (present/pprof.py) and the agent's
wire format (formats/wire/window_pprof.py) both use it and add their own sample types,
values and labels.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..model.profile import KERNEL_DSO, Frame, Profile

if TYPE_CHECKING:
    from . import profile_pb2 as pb


class ProfileMessage:
    """Interns what the samples of `profile` refer to into `msg`, once each."""

    def __init__(self, profile: Profile, msg: pb.Profile, program_first: bool = False) -> None:
        self.profile = profile
        self.msg = msg
        self._strings: dict[str, int] = {}
        self._functions: dict[tuple[str, str], int] = {}
        self._mappings: dict[tuple[str, str], int] = {}
        self._locations: dict[tuple[int, ...], int] = {}
        self._build_ids = {d.get("path", ""): d.get("build_id", "") for d in profile.dsos}
        self.intern("")
        main = _main_executable(profile) if program_first else None
        if main is not None:
            self._mapping_id(main)  # pprof takes the first mapping for the program itself

    def intern(self, s: str) -> int:
        return _intern(self._strings, s, lambda: self._add_string(s))

    def location_ids(self, stack: Sequence[int]) -> list[int]:
        """Leaf-first frame ids as location ids: inlined frames join their caller."""
        ids: list[int] = []
        group: list[int] = []
        for fid in stack:
            group.append(fid)
            if not self.profile.frames[fid].inlined:
                ids.append(self._location_id(tuple(group)))
                group = []
        if group:
            ids.append(self._location_id(tuple(group)))
        return ids

    def _add_string(self, s: str) -> int:
        self.msg.string_table.append(s)
        return len(self.msg.string_table) - 1

    def _location_id(self, group: tuple[int, ...]) -> int:
        return _intern(self._locations, group, lambda: self._add_location(group))

    def _add_location(self, group: tuple[int, ...]) -> int:
        frames = [self.profile.frames[f] for f in group]
        loc = self.msg.location.add(id=len(self.msg.location) + 1)
        loc.mapping_id = self._mapping_id(frames[-1])
        loc.address = frames[-1].address if frames[-1].build_id else 0
        for f in frames:
            loc.line.add(function_id=self._function_id(f), line=f.line)
        return loc.id

    def _function_id(self, frame: Frame) -> int:
        key = (frame.function, frame.file)
        return _intern(self._functions, key, lambda: self._add_function(frame))

    def _add_function(self, frame: Frame) -> int:
        fn = self.msg.function.add(id=len(self.msg.function) + 1)
        fn.name = fn.system_name = self.intern(frame.function)
        fn.filename = self.intern(frame.file)
        return fn.id

    def _mapping_id(self, frame: Frame) -> int:
        dso = frame.dso or (KERNEL_DSO if frame.kernel else "")
        if not dso and not frame.build_id:
            return 0
        key = (dso, frame.build_id)
        return _intern(self._mappings, key, lambda: self._add_mapping(*key))

    def _add_mapping(self, dso: str, build_id: str) -> int:
        mapping = self.msg.mapping.add(id=len(self.msg.mapping) + 1, filename=self.intern(dso))
        mapping.build_id = self.intern(build_id or self._build_ids.get(dso, ""))
        mapping.has_functions = mapping.has_filenames = mapping.has_line_numbers = True
        mapping.has_inline_frames = True
        return mapping.id


def _main_executable(profile: Profile) -> Frame | None:
    """A frame of the program's own executable: user code outside shared objects, in the
    object most frames are in. Without it first, pprof names the dynamic loader (whose
    code often runs first) as the program and its disassembly fails."""
    counts: dict[str, int] = {}
    first: dict[str, Frame] = {}
    for frame in profile.frames:
        dso = frame.dso
        if not dso or frame.kernel or dso.startswith("[") or _SHARED_OBJECT.search(dso):
            continue
        counts[dso] = counts.get(dso, 0) + 1
        first.setdefault(dso, frame)
    return first[max(counts, key=lambda d: (counts[d], d))] if counts else None


_SHARED_OBJECT = re.compile(r"\.so(\.[\d.]+)?$|^ld-linux|^linux-vdso")


def _intern(table: dict, key: object, make: Callable[[], int]) -> int:
    value = table.get(key)
    if value is None:
        value = table[key] = make()
    return value
