"""The command line of the count views (`top`, `diff`, `annotate`) parsed without argparse.

Importing argparse (with the re, enum and gettext it imports) and building a command's
parser cost a count view 4-8 ms of its 35-50, on a program where cg_diff takes 50 ms in
all (docs/counts.md). Here a command's own `add_arguments` is run on a stand-in that
records its options, and argv is parsed as argparse would parse it, for the plain forms
only: options named in full (`--format json`, `--format=json`, `-n 40`), their values not
starting with `-`, positionals given where argparse would take them. Anything else
(`--help`, an abbreviation, a value argparse would refuse, an option it would take a
negative number for, two options of one exclusive group) gives None, and argparse parses
the line, with its own messages. tests/unit/test_quick_args.py holds the two to the same
namespace on every line it parses.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

from . import load

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

QUICK = ("top", "diff", "annotate")  # the commands parsed here
GLOBAL_OPTIONS = ("--store", "--quiet")  # cli.add_global_options's, taken before or after
REQUIRED, OPTIONAL = None, "?"  # a positional's nargs


class Unparsed(Exception):
    """A form left to argparse."""


class Option:
    __slots__ = ("dest", "kind", "const", "default", "type", "choices", "group")

    def __init__(self, dest: str, kind: str, **given: Any) -> None:
        self.dest = dest
        self.kind = kind  # store, store_true, store_const, append
        self.const = given.get("const")
        self.default = given.get("default", False if kind == "store_true" else None)
        self.type: Callable[[str], Any] | None = given.get("type")
        self.choices = given.get("choices")
        self.group: object = None


class Stand:
    """What a command's add_arguments adds, in its order: the stand-in for its parser."""

    KINDS = ("store", "store_true", "store_const", "append")
    KNOWN = frozenset(("action", "dest", "const", "default", "type", "choices", "nargs"))

    def __init__(self, group: object = None, into: Stand | None = None) -> None:
        self.top = self if into is None else into
        self.group = group
        if into is None:
            self.options: dict[str, Option] = {}
            self.actions: list[Option] = []  # every option and positional, in order
            self.positionals: list[tuple[Option, str | None]] = []

    def add_argument(self, *names: str, **given: Any) -> None:
        given.pop("help", None)
        given.pop("metavar", None)
        kind = given.get("action", "store")
        if kind not in self.KINDS or not self.KNOWN.issuperset(given):
            raise Unparsed
        nargs = given.get("nargs")
        if not names[0].startswith("-"):
            if nargs not in (REQUIRED, OPTIONAL) or kind != "store" or "type" in given:
                raise Unparsed
            option = Option(names[0], kind, **given)
            self.top.positionals.append((option, nargs))
        else:
            if nargs is not None:
                raise Unparsed
            long = next((n for n in names if n.startswith("--")), names[0])
            dest = given.pop("dest", long.lstrip("-").replace("-", "_"))
            option = Option(dest, kind, **given)
            option.group = self.group
            for name in names:
                self.top.options[name] = option
        self.top.actions.append(option)

    def add_mutually_exclusive_group(self, required: bool = False) -> Stand:
        if required:
            raise Unparsed
        return Stand(object(), self.top)


def parse(argv: list[str]) -> SimpleNamespace | None:
    """The namespace argparse's parser (cli.build_parser) gives for argv, or None for a
    command not parsed here or a form left to argparse (the module's doc)."""
    store = os.environ.get("PERFSLEUTH_STORE") or ".perfsleuth"
    values: dict[str, Any] = {"store": store, "quiet": False}
    i = 0
    try:
        while i < len(argv) and argv[i] != "--quiet" and argv[i].startswith("--store"):
            i = _global(argv, i, values)
        if i < len(argv) and argv[i] == "--quiet":
            values["quiet"] = True
            i += 1
            while i < len(argv) and argv[i].startswith("--store"):
                i = _global(argv, i, values)
        if i >= len(argv) or argv[i] not in QUICK:
            return None
        command = argv[i]
        module = load(command)
        stand = Stand()
        module.add_arguments(stand)
        values |= {"command": command, **_parsed(stand, argv[i + 1 :])}
    except Unparsed:
        return None
    values["handler"] = module.run
    return SimpleNamespace(**values)


def _global(argv: list[str], i: int, values: dict[str, Any]) -> int:
    """A --store given before the command: where the next argument starts."""
    name, equals, value = argv[i].partition("=")
    if name != "--store" or (equals and not value):
        raise Unparsed  # `--store=` is an empty folder's name to argparse
    if not equals:
        if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
            raise Unparsed
        i, value = i + 1, argv[i + 1]
    values["store"] = value
    return i + 1


def _parsed(stand: Stand, argv: list[str]) -> dict[str, Any]:
    """The command's values of argv (after its name), as argparse's subparser sets them."""
    values: dict[str, Any] = {}
    for action in stand.actions:
        values.setdefault(action.dest, action.default)
    seen: dict[object, Option] = {}  # exclusive group -> its option given
    given: set[int] = set()
    positionals = list(stand.positionals)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            chunk = 0
            while i + chunk < len(argv) and not argv[i + chunk].startswith("-"):
                chunk += 1
            taken = _positionals(positionals, argv[i : i + chunk], values)
            if not taken:
                raise Unparsed  # more strings than positionals: argparse's error
            i += taken
            continue
        name, equals, value = arg.partition("=")
        if name in GLOBAL_OPTIONS:
            i = _global(argv, i, values) if name == "--store" else _quiet(equals, values, i)
            continue
        option = stand.options.get(name)
        if option is None or (equals and not name.startswith("--")):
            raise Unparsed
        if option.group is not None and seen.setdefault(option.group, option) is not option:
            raise Unparsed
        given.add(id(option))
        if option.kind in ("store_true", "store_const"):
            if equals:
                raise Unparsed
            values[option.dest] = True if option.kind == "store_true" else option.const
            i += 1
            continue
        if not equals:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                raise Unparsed
            value = argv[i + 1]
            i += 1
        i += 1
        converted = _value(option, value)
        if option.kind == "append":
            values[option.dest] = [*(values[option.dest] or ()), converted]
        else:
            values[option.dest] = converted
    if _positionals(positionals, [], values) < 0:
        raise Unparsed
    for action in stand.actions:  # a default given as a string goes through its type
        default = action.default
        unseen = id(action) not in given and values[action.dest] is default
        if unseen and action.type and isinstance(default, str):
            values[action.dest] = _value(action, default)
    return values


def _quiet(equals: str, values: dict[str, Any], i: int) -> int:
    if equals:
        raise Unparsed
    values["quiet"] = True
    return i + 1


def _value(option: Option, text: str) -> Any:
    try:
        value = text if option.type is None else option.type(text)
    except (TypeError, ValueError) as e:
        raise Unparsed from e
    if option.choices is not None and value not in option.choices:
        raise Unparsed
    return value


def _positionals(
    left: list[tuple[Option, str | None]], strings: list[str], values: dict[str, Any]
) -> int:
    """Give `strings` (a run of them between options) to the positionals `left`, as
    argparse's consume_positionals does: the most positionals that can match, each
    optional one taking a string while enough are left for the required ones after it;
    every positional matched is used up, with no string or one. The number of strings
    taken (0 with none left to take them)."""
    matched = len(left)
    while sum(nargs is REQUIRED for _o, nargs in left[:matched]) > len(strings):
        matched -= 1
    if not strings and matched < len(left):
        return -1  # a required positional never given
    taken = 0
    for k, (option, nargs) in enumerate(left[:matched]):
        after = sum(n is REQUIRED for _o, n in left[k + 1 : matched])
        if nargs is REQUIRED or len(strings) - taken > after:
            values[option.dest] = strings[taken]
            taken += 1
    del left[:matched]
    if taken < len(strings):
        return 0
    return taken
