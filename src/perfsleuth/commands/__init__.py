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
)


def load_all() -> list[ModuleType]:
    return [import_module(f"{__name__}.{name}") for name in COMMAND_MODULES]
