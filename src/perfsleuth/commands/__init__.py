"""One module per subcommand (as Linux perf does): NAME, HELP, add_arguments(), run()."""

from importlib import import_module
from types import ModuleType

# Order is the order of `perfsleuth --help`.
COMMAND_MODULES = (
    "run",
    "record",
    "import_",
    "runs",
    "threads",
    "top",
    "callers",
    "callees",
    "flame",
    "annotate",
    "diff",
    "advise",
    "lint",
    "export",
    "serve",
    "report",
    "compare",
    "try_",
    "gate",
    "cache",
    "fleet",
    "collector",
    "agent",
    "symbols",
)


def load_all() -> list[ModuleType]:
    return [import_module(f"{__name__}.{name}") for name in COMMAND_MODULES]


def load_for(argv: list[str]) -> list[ModuleType]:
    """Only the module of the command argv names, when it names one; else all.

    Importing every command pulls in every collector and analyzer (capstone,
    libclang, the HTTP server...): a third of a second before `top` can start.
    """
    name = argv[0] if argv else "-"
    module = name if name in COMMAND_MODULES else f"{name}_"
    if module not in COMMAND_MODULES:
        return load_all()  # --help, --version, a typo: argparse needs them all
    return [import_module(f"{__name__}.{module}")]
