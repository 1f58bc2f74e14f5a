"""Library-replacement rules: data in TOML, loaded and checked here.

A rules file is a list of `[[rule]]` tables. The shipped rules live beside this
module (library.toml); a user adds or overrides rules (same `id` replaces) with
`--rules FILE` and `<store>/rules.toml`. Every mistake in a file is reported as
one line naming the file, the line and the field.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..model.findings import KINDS
from ..model.profile import Frame

SHIPPED = Path(__file__).with_name("library.toml")
# The cost taxonomy (analyzers/cost_classes.py): every sample's class, written as rules
COST_CLASSES = Path(__file__).with_name("cost_classes.toml")

# field -> (python type, required)
FIELDS: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "id": (str, True),
    "kind": (str, True),
    "title": (str, True),
    "functions": (list, False),
    "dsos": (list, False),
    "files": (list, False),
    "exclude_functions": (list, False),
    "entry_functions": (list, False),
    "exclude_dsos": (list, False),
    "only_dsos": (list, False),
    "not_under": (list, False),
    "replacement": (str, True),
    "apply": (str, True),
    "code_change": (bool, True),
    "saving": ((int, float), True),
    "saving_range": (list, True),
    "source": (str, True),
    "confidence": ((int, float), True),
    "min_share": ((int, float), False),
    "preload": (list, False),
    "install": (str, False),
    "environment": (dict, False),
    "scope": (str, False),
    "source_nodes": (list, False),
    "inside": (list, False),
    "alongside": (list, False),
    "blocking": (bool, False),
    "min_threads": (int, False),
    "min_processes": (int, False),
    "parallel_replacement": (str, False),
    "parallel_apply": (str, False),
    "c_replacement": (str, False),
    "c_apply": (str, False),
    "unsaved_leaves": (list, False),
    "unsaved_under": (list, False),
}
PATTERN_FIELDS = (
    "functions",
    "dsos",
    "files",
    "exclude_functions",
    "entry_functions",
    "exclude_dsos",
    "only_dsos",
    "not_under",
    "source_nodes",
    "unsaved_leaves",
    "unsaved_under",
)
DEFAULT_MIN_SHARE = 0.02
# where a matching frame must be: anywhere on the stack, or the leaf (the time is its own)
SCOPES = ("stack", "self")


@dataclass(frozen=True)
class Rule:
    """One rule; `saving` is the expected fraction of the matched time a fix saves."""

    id: str
    kind: str
    title: str
    replacement: str
    apply: str
    code_change: bool
    saving: float
    saving_range: tuple[float, float]
    source: str
    confidence: float
    functions: tuple[re.Pattern[str], ...] = ()
    dsos: tuple[re.Pattern[str], ...] = ()
    # the library's source files (a frame's file:line, from debug info): its static
    # helpers, which carry no exported prefix, in a program that links it statically.
    # They count only in a profile where `functions` or `dsos` match a frame too
    # (`with_evidence`): a program's own deflate.c is not zlib's
    files: tuple[re.Pattern[str], ...] = ()
    exclude_functions: tuple[re.Pattern[str], ...] = ()
    exclude_dsos: tuple[re.Pattern[str], ...] = ()
    # the DSOs a frame must be in for the rule to match it at all: names common enough
    # to be anyone's (HotSpot's C2 classes `Node::`, `Compile::`) count in libjvm only
    only_dsos: tuple[re.Pattern[str], ...] = ()
    # the callers (functions or DSOs) under which a match is the program's job, not a cost
    # to remove: compiling under `python -m compileall` is what it was run for
    not_under: tuple[re.Pattern[str], ...] = ()
    # names too common to be the library's by themselves (zlib's `compress`, bzip2's
    # own `compress`): a frame so named counts only above a frame the rule matches
    entry_functions: tuple[re.Pattern[str], ...] = ()
    min_share: float = DEFAULT_MIN_SHARE
    preload: tuple[str, ...] = ()
    install: str = ""
    # a fix made of environment variables alone (GOGC=400): `advise --verify` times it
    environment: tuple[tuple[str, str], ...] = ()
    origin: str = ""
    scope: str = "stack"
    # patterns the shape of a Python frame's source line must all match
    # (static_analysis/python_source.py: node types, `Parent>Child` pairs, enclosing statements)
    source_nodes: tuple[re.Pattern[str], ...] = ()
    # cost classes: the ids of the classes whose calls this one takes over when it runs
    # under them (a write(2) under printf is write's cost), and whether it waits off the CPU
    inside: tuple[str, ...] = ()
    # library rules whose finding does not speak for this class: their fix is another
    # one (preload mimalloc vs allocate less), so both findings are made
    alongside: tuple[str, ...] = ()
    blocking: bool = False
    min_threads: int = 1  # threads that must have samples for the rule to apply
    min_processes: int = 1  # processes that must have samples (cost classes)
    # what to say instead of replacement/apply when the matched code already runs on
    # several threads (xz -T2 told to use `xz -T0`): "" keeps them
    parallel_replacement: str = ""
    parallel_apply: str = ""
    # what to say instead when the user's call is C code (a C program told to use
    # std::from_chars): "" keeps them
    c_replacement: str = ""
    c_apply: str = ""
    # cost classes: the leaves that copy the bytes of a read or write, whose part of the
    # class's time says how large the calls are (and what bigger ones would save)
    unsaved_leaves: tuple[re.Pattern[str], ...] = ()
    # and the frames under which its time is the data's, not the calls' (a read's disk I/O)
    unsaved_under: tuple[re.Pattern[str], ...] = ()

    def matches(self, function: str, dso: str, file: str = "") -> bool:
        names, dso_names = _names_and_files(function, dso)
        if self._excluded(names, dso_names):
            return False
        return (
            any(p.search(n) for p in self.functions for n in names)
            or any(p.search(f) for p in self.dsos for f in dso_names)
            or any(p.search(f) for p in self.files for f in _path_names(file))
        )

    def enters(self, function: str, dso: str) -> bool:
        """An entry name (`entry_functions`): the rule's only above a frame it matches."""
        names, files = _names_and_files(function, dso)
        return not self._excluded(names, files) and any(
            p.search(n) for p in self.entry_functions for n in names
        )

    def is_job_of(self, function: str, dso: str) -> bool:
        """A caller under which a match is the program's job (`not_under`)."""
        names, files = _names_and_files(function, dso)
        return any(p.search(n) for p in self.not_under for n in names | files)

    def _excluded(self, names: set[str], files: set[str]) -> bool:
        if self.only_dsos and not any(p.search(f) for p in self.only_dsos for f in files):
            return True
        return any(p.search(n) for p in self.exclude_functions for n in names) or any(
            p.search(f) for p in self.exclude_dsos for f in files
        )


def _names_and_files(function: str, dso: str) -> tuple[set[str], set[str]]:
    """The names a pattern is tried on: a count run names DSOs by their whole path
    (callgrind's), a sampled run by file name: a pattern for libz.so is meant for both."""
    names = {function, without_return_type(function)}
    return names, ({dso, dso.rsplit("/", 1)[-1]} if dso.startswith("/") else {dso})


def _path_names(file: str) -> set[str]:
    """A source file's whole path and its file name (none for a frame without one)."""
    return {file, file.rsplit("/", 1)[-1]} if file else set()


def with_evidence(rules: Sequence[Rule], frames: Iterable[Frame]) -> list[Rule]:
    """RULES for one profile's FRAMES: a rule's `files` are kept only when its functions
    or DSOs match one of the frames (cJSON_Parse beside cJSON.c's parse_value), so a
    program's own source file named like a library's is not taken for the library."""
    pending = {i for i, rule in enumerate(rules) if rule.files}
    if not pending:
        return list(rules)
    for function, dso in {(f.function, f.dso) for f in frames}:
        pending -= {i for i in pending if rules[i].matches(function, dso)}
        if not pending:
            break
    return [dataclasses.replace(r, files=()) if i in pending else r for i, r in enumerate(rules)]


def without_return_type(function: str) -> str:
    """`std::pair<It, bool> std::_Rb_tree<...>::f(...)` -> `std::_Rb_tree<...>::f(...)`.

    Demangled function templates start with their return type; patterns anchored
    at the start should see the qualified name.
    """
    depth = 0
    last_space = -1
    for i, ch in enumerate(function):
        if ch in "<(":
            if ch == "(" and depth == 0:
                break
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif ch == " " and depth == 0:
            last_space = i
    return function[last_space + 1 :] if last_space >= 0 else function


def load_rules(extra_files: Iterable[Path] = ()) -> list[Rule]:
    """The shipped rules, then each extra file's; a later rule replaces one with its id."""
    by_id: dict[str, Rule] = {}
    for path in (SHIPPED, *extra_files):
        for rule in load_file(path):
            by_id[rule.id] = rule
    return list(by_id.values())


def load_classes() -> list[Rule]:
    """The cost classes, most specific first (a frame belongs to the first that matches)."""
    return load_file(COST_CLASSES)


def load_file(path: Path) -> list[Rule]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read the rules file {path}: {e.strerror}") from e
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: TOML syntax error: {e}") from e
    unknown_top = sorted(set(doc) - {"rule"})
    if unknown_top:
        line = _line_of(text, unknown_top[0], 0)
        raise UserError(
            f"{path}:{line}: unknown field {unknown_top[0]!r}; a rules file holds [[rule]] tables"
        )
    tables = doc.get("rule", [])
    if not isinstance(tables, list):
        raise UserError(f"{path}: 'rule' must be written as [[rule]] tables")
    return [_rule_from(table, index, path, text) for index, table in enumerate(tables)]


def _rule_from(table: dict[str, Any], index: int, path: Path, text: str) -> Rule:
    start = _rule_start_line(text, index)

    def fail(field: str, problem: str) -> UserError:
        if not field:
            return UserError(f"{path}:{start}: rule #{index + 1}: {problem}")
        line = _line_of(text, field, start)
        return UserError(f"{path}:{line}: rule #{index + 1}, field {field!r}: {problem}")

    for name in table:
        if name not in FIELDS:
            raise fail(name, f"unknown field (known fields: {', '.join(FIELDS)})")
    for name, (typ, required) in FIELDS.items():
        if name not in table:
            if required:
                raise fail("", f"missing required field {name!r}")
            continue
        value = table[name]
        if not isinstance(value, typ) or (typ is not bool and isinstance(value, bool)):
            raise fail(name, f"expected {_type_name(typ)}, got {type(value).__name__}")
    if not table.get("functions") and not table.get("dsos"):
        raise fail("functions", "a rule needs `functions` or `dsos` patterns")
    if table["kind"] not in KINDS:
        raise fail("kind", f"unknown kind {table['kind']!r} (known: {', '.join(KINDS)})")
    for name in ("saving", "confidence", "min_share"):
        if name in table and not 0.0 <= float(table[name]) <= 1.0:
            raise fail(name, "must be a fraction between 0 and 1")
    for name in ("min_threads", "min_processes"):
        if int(table.get(name, 1)) < 1:
            raise fail(name, "must be 1 or more")
    if table.get("scope", SCOPES[0]) not in SCOPES:
        raise fail("scope", f"must be one of {', '.join(SCOPES)}")
    low_high = table["saving_range"]
    if len(low_high) != 2 or not all(
        isinstance(v, int | float) and 0.0 <= v <= 1.0 for v in low_high
    ):
        raise fail("saving_range", "must be [low, high], fractions between 0 and 1")
    patterns = {name: _compile(table.get(name, []), name, fail) for name in PATTERN_FIELDS}
    return Rule(
        id=table["id"],
        kind=table["kind"],
        title=table["title"],
        replacement=table["replacement"],
        apply=table["apply"],
        code_change=table["code_change"],
        saving=float(table["saving"]),
        saving_range=(float(low_high[0]), float(low_high[1])),
        source=table["source"],
        confidence=float(table["confidence"]),
        functions=patterns["functions"],
        dsos=patterns["dsos"],
        files=patterns["files"],
        exclude_functions=patterns["exclude_functions"],
        exclude_dsos=patterns["exclude_dsos"],
        only_dsos=patterns["only_dsos"],
        not_under=patterns["not_under"],
        entry_functions=patterns["entry_functions"],
        min_share=float(table.get("min_share", DEFAULT_MIN_SHARE)),
        preload=tuple(table.get("preload", [])),
        install=table.get("install", ""),
        environment=tuple((str(k), str(v)) for k, v in table.get("environment", {}).items()),
        origin=f"{path}:{start}",
        scope=table.get("scope", SCOPES[0]),
        source_nodes=patterns["source_nodes"],
        inside=tuple(str(v) for v in table.get("inside", [])),
        alongside=tuple(str(v) for v in table.get("alongside", [])),
        blocking=bool(table.get("blocking", False)),
        min_threads=int(table.get("min_threads", 1)),
        min_processes=int(table.get("min_processes", 1)),
        parallel_replacement=table.get("parallel_replacement", ""),
        parallel_apply=table.get("parallel_apply", ""),
        c_replacement=table.get("c_replacement", ""),
        c_apply=table.get("c_apply", ""),
        unsaved_leaves=patterns["unsaved_leaves"],
        unsaved_under=patterns["unsaved_under"],
    )


def _compile(values: list[Any], field: str, fail: Any) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for value in values:
        if not isinstance(value, str):
            raise fail(field, f"patterns must be strings, got {type(value).__name__}")
        try:
            compiled.append(re.compile(value))
        except re.error as e:
            raise fail(field, f"bad regular expression {value!r}: {e}") from e
    return tuple(compiled)


def _type_name(typ: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list", bool: "true or false"}
    return names.get(typ, "a number") if isinstance(typ, type) else "a number"


def _rule_start_line(text: str, index: int) -> int:
    """1-based line of the index-th [[rule]] header (1 when not found)."""
    seen = -1
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r"\s*\[\[\s*rule\s*\]\]", line):
            seen += 1
            if seen == index:
                return number
    return 1


def _line_of(text: str, field: str, start: int) -> int:
    """1-based line where `field = ...` is set at or after line `start`."""
    key = re.compile(rf"\s*[\"']?{re.escape(field)}[\"']?\s*=")
    lines = text.splitlines()
    for number in range(max(start, 1), len(lines) + 1):
        line = lines[number - 1]
        if number > start and re.match(r"\s*\[", line):
            break
        if key.match(line):
            return number
    return max(start, 1)
