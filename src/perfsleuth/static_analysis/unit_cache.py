"""Analyses of translation units kept on disk by content, so that linting an
unchanged codebase again costs a stat of each file the units read.

An entry is found by what the analysis was asked (the unit's path, flags, build
folder, compiler and producer, whether every loop's remark was wanted, a profile's
hot lines for `advise`, whether the compilers' machine code was wanted) and the analysis code
itself; it holds the report and each file the unit read — its source and every
header — with its size, modification time and content hash. It is used only while
every one of those files has the same content (same size and time, else the same
hash: a `touch` does not throw it away). A unit that does not compile is kept with
the folders its headers are looked up in as inputs too (a header added there changes
the folder's time); one that ran out of CPU time, was cut short by advise's budget or
crashed is not. Entries are written whole
(a temporary file renamed), in $XDG_CACHE_HOME/perfsleuth/units.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path

from .aliasing_patterns import HotLines
from .source import TranslationUnit
from .unit_report import UnitReport

# What a cache file may fail with when it is partly written by an older version, or
# corrupt: it is then analysed again.
UNREADABLE = (OSError, EOFError, ValueError, TypeError, AttributeError, ImportError, KeyError)
ANALYSIS_CODE = Path(__file__).resolve().parent


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfsleuth" / "units"


@functools.cache
def code_version() -> str:
    """A hash of the analysis code: another version's reports are not reused."""
    digest = hashlib.blake2b(digest_size=16)
    for module in sorted(ANALYSIS_CODE.glob("*.py")):
        digest.update(module.read_bytes())
    return digest.hexdigest()


Fingerprint = tuple[int, int, str]  # size, modification time (ns), content hash
FOLDER = "folder"  # the "hash" of a folder, known by its time


class UnitCache:
    """The on-disk reports of one lint: file fingerprints are read once per run."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root()
        self._stats: dict[str, tuple[int, int] | None] = {}
        self._hashes: dict[str, str] = {}

    def get(
        self,
        unit: TranslationUnit,
        all_remarks: bool,
        hot_lines: HotLines | None = None,
        object_code: bool = True,
    ) -> UnitReport | None:
        try:
            entry = pickle.loads(self._file(unit, all_remarks, hot_lines, object_code).read_bytes())
            inputs, report = entry["inputs"], entry["report"]
        except UNREADABLE:
            return None
        if not isinstance(report, UnitReport):
            return None
        unchanged = all(self._unchanged(name, fingerprint) for name, fingerprint in inputs.items())
        return report if unchanged else None

    def put(
        self,
        report: UnitReport,
        all_remarks: bool,
        hot_lines: HotLines | None = None,
        object_code: bool = True,
    ) -> None:
        if report.too_long or not report.inputs:
            return
        inputs = {name: self._fingerprint(name) for name in report.inputs}
        if any(fingerprint is None for fingerprint in inputs.values()):
            return
        target = self._file(report.unit, all_remarks, hot_lines, object_code)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = pickle.dumps({"inputs": inputs, "report": report})
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, target)

    def _file(
        self,
        unit: TranslationUnit,
        all_remarks: bool,
        hot_lines: HotLines | None,
        object_code: bool,
    ) -> Path:
        question: list[object] = [
            code_version(),
            str(unit.path),
            unit.flags,
            str(unit.directory or ""),
            unit.producer,
            unit.compiler,
            all_remarks,
            object_code,
        ]
        if hot_lines is not None:  # a profile's analysis reads only the hot functions
            question.append(sorted(hot_lines))
        key = hashlib.blake2b(json.dumps(question).encode(), digest_size=20).hexdigest()
        return self.root / key[:2] / key

    def _stat(self, name: str) -> tuple[int, int] | None:
        if name not in self._stats:
            try:
                stat = os.stat(name)
                self._stats[name] = (stat.st_size, stat.st_mtime_ns)
            except OSError:
                self._stats[name] = None
        return self._stats[name]

    def _hash(self, name: str) -> str:
        """The content hash of a file; a folder is known by its time alone."""
        if name not in self._hashes:
            path = Path(name)
            if path.is_dir():
                self._hashes[name] = FOLDER
            else:
                self._hashes[name] = hashlib.blake2b(path.read_bytes()).hexdigest()
        return self._hashes[name]

    def _fingerprint(self, name: str) -> Fingerprint | None:
        stat = self._stat(name)
        if stat is None:
            return None
        try:
            return (*stat, self._hash(name))
        except OSError:
            return None

    def _unchanged(self, name: str, fingerprint: Fingerprint) -> bool:
        stat = self._stat(name)
        if stat is None:
            return False
        if stat == fingerprint[:2]:
            return True
        if fingerprint[2] == FOLDER:
            return False
        try:
            return self._hash(name) == fingerprint[2]
        except OSError:
            return False
