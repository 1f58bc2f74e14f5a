"""Outputs, one module each, registered by name: text, json, sarif, markdown, html, folded,
pprof, speedscope.

Every module here that defines `OUTPUT = Output(...)` is an output (found by `outputs()`,
as analyzers/__init__.discover() finds analyzers). An output writes documents of the
kinds it lists: `findings`, the views' documents (`top`, `callers`, ...), `profile` (a
whole run for other tools), `ui` (the web UI as one page). The commands' `--format`
choices and help, and `perfsleuth export`'s options, come from this registry; so a new
format is one module here, its test and one line in docs/output.md.

Text is one output for every document, so it dispatches: `<document>_text.py` modules
hold the renderers, `render(doc, console)`, and text.py's table names the one for each
document kind. They are flat modules beside the outputs rather than a text/ package so
that every view's text sits where its owner looks for it (diff_text, annotate_text,
cpu_cache_text, top_text, ...); the `_text` suffix keeps them out of the registry scan, so
they load only when text is written and a command's start pays for none of them. A new
command adds a renderer and a table line; a new format never touches them.

Text and json write every view's document (`top`, `diff`, ...); the other outputs write
only the kinds named here (findings, profile, ui: ANY_OUTPUT_KINDS), which
tests/unit/test_present_registry.py holds to. So a view's `--format` choices are found
in text.py and json.py alone: importing the seven other output modules cost a count
view 0.002-0.003 CPU-s of its start (docs/counts.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib import import_module
from os import listdir, path

from .output import destination

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import IO, Any

    from ..model.profile import Profile  # the type alone: `top` reads no profile

    Writer = Callable[[Any, IO[Any]], None]

FINDINGS = "findings"  # an advise document: {"run", "findings", "hidden", "notes", ...}
PROFILE = "profile"  # a TitledProfile: a run for other tools (export, flame)
UI = "ui"  # an html.UiBundle: the web UI's answers for one run (`perfsleuth report`)
ANY_OUTPUT_KINDS = (FINDINGS, PROFILE, UI)  # the kinds other outputs than text and json write
DEFAULT = "text"
VIEW_OUTPUTS = (DEFAULT, "json")  # the outputs of the views' documents (the module's doc)
TEXT_RENDERER_SUFFIX = "_text"


class Output:
    """An output: its --format value (or export option), its one line for --help, the
    writer of each document kind it writes to an open file, and whether it writes bytes.
    A plain class, as TitledProfile: every command's start spares typing's NamedTuple
    (typing's import is 6% of a count view's instructions) and dataclasses'."""

    __slots__ = ("name", "help", "writers", "binary")

    def __init__(
        self, name: str, help: str, writers: Mapping[str, Writer], binary: bool = False
    ) -> None:
        self.name = name
        self.help = help
        self.writers = writers
        self.binary = binary


class TitledProfile:
    __slots__ = ("profile", "title")

    def __init__(self, profile: Profile, title: str) -> None:
        self.profile = profile
        self.title = title


@cache
def outputs() -> dict[str, Output]:
    """name -> Output, for every output module in this package."""
    found = {}
    for name in _module_names():
        if name.endswith(TEXT_RENDERER_SUFFIX):
            continue  # the text output's renderers, imported only when text is written
        output = getattr(import_module(f"{__name__}.{name}"), "OUTPUT", None)
        if isinstance(output, Output):
            found[output.name] = output
    return dict(sorted(found.items()))


def _module_names() -> list[str]:
    """The modules of this package, by name (pkgutil.iter_modules imports inspect, a
    seventh of `diff`'s CPU on a small program)."""
    files = (f for folder in __path__ for f in listdir(folder))
    return sorted({f[: -len(".py")] for f in files if f.endswith(".py") and f != "__init__.py"})


def output(name: str) -> Output:
    """The output NAME, from the module of that name when it is one (every output module
    is named as its output, which tests/unit/test_present_registry.py checks), without
    importing the others: `import` and `top` write one format."""
    module = f"{__name__}.{name}"
    if name.isidentifier() and any(path.isfile(f"{folder}/{name}.py") for folder in __path__):
        found = getattr(import_module(module), "OUTPUT", None)
        if isinstance(found, Output) and found.name == name:
            return found
    return outputs()[name]


def outputs_for(kind: str) -> list[Output]:
    """The outputs that write documents of `kind`: text first, then by name."""
    found = outputs().values() if kind in ANY_OUTPUT_KINDS else map(output, VIEW_OUTPUTS)
    return sorted(
        (o for o in found if kind in o.writers), key=lambda o: (o.name != DEFAULT, o.name)
    )


def formats_for(kind: str) -> tuple[str, ...]:
    return tuple(o.name for o in outputs_for(kind))


def describe(names: tuple[str, ...]) -> str:
    """`name: help; ...` of these outputs, for a --format help text."""
    return "; ".join(f"{name}: {output(name).help}" for name in names)


def write(kind: str, doc: Any, fmt: str, path: str | None) -> None:
    """Write `doc`, a document of `kind`, as `fmt` to `path` (stdout for None or '-')."""
    chosen = output(fmt)
    writer = chosen.writers[kind]
    with destination(path, binary=chosen.binary) as fh:
        writer(doc, fh)
