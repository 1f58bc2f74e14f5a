"""One module per subcommand (as Linux perf does): NAME, HELP, add_arguments(), run().

Commands are registered by name with their one line of help, so `perfsleuth --help`
lists them all and `perfsleuth top` builds only `top`'s parser without importing any
other command's module (each pulls in its collectors and analyzers: capstone,
libclang, DuckDB, the HTTP server...). tests/unit/test_cli.py keeps every line here
equal to its module's HELP.
"""

from importlib import import_module
from types import ModuleType

# name -> (module, help), in the order of `perfsleuth --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "record a command and print ranked findings (the main job)"),
    "record": ("record", "record a command (or a running process) into the store"),
    "import": (
        "import_",
        "import a profile file as a run: perf.data, pprof profile.proto (plain or gzipped), "
        "callgrind/cachegrind out, speedscope JSON, perf script text, py-spy raw (Python "
        "frames mixed with native), FlameGraph folded stacks",
    ),
    "runs": ("runs", "list stored runs"),
    "threads": (
        "threads",
        "per thread (name, tid): time by state (running, mutex, condvar, io, sleep, other)",
    ),
    "top": ("top", "top functions, lines, files or DSOs by self or total cost"),
    "callers": ("callers", "callers of a function, with percentages"),
    "callees": ("callees", "callees of a function, with percentages"),
    "flame": ("flame", "flame graph: --folded text or --html FILE"),
    "annotate": ("annotate", "source lines of a function with their cost"),
    "diff": ("diff", "what changed between two runs"),
    "advise": ("advise", "ranked findings (what to fix first) for a stored run"),
    "lint": (
        "lint",
        "find aliasing writes and unvectorised loops in C/C++ sources (no profile needed)",
    ),
    "export": (
        "export",
        "export a run for other tools: one option per profile output (pprof, speedscope...)",
    ),
    "serve": ("serve", "web UI and HTTP API over the store (127.0.0.1 unless --host and --token)"),
    "report": ("report", "the web UI for one run as a single self-contained HTML file"),
    "compare": (
        "compare",
        "A/B-compare two commands: interleaved runs, ratio with 95%% CI, verdict",
    ),
    "try": (
        "try_",
        "try other allocators (LD_PRELOAD), build flags (O3, LTO, PGO...), a patch, or all of "
        "them combined on a workload",
    ),
    "gate": (
        "gate",
        "CI gate: fail when a workload's exact instruction count grows past a threshold",
    ),
    "cache": (
        "cpu_cache",
        "show the cache footprint, struct layout, cache model, scaling and constant-time "
        "projections",
    ),
    "fleet": (
        "fleet",
        "the fleet store: status, queries (top, flame, diff, series), advise, watch, upkeep",
    ),
    "collector": (
        "collector",
        "receive profiles from agents, Pyroscope, OTLP and pprof clients into the fleet store",
    ),
    "agent": (
        "agent",
        "profile the whole host continuously and push windows to a collector (needs root)",
    ),
    "symbols": (
        "symbols",
        "upload symbols (an unstripped binary or a .debug file) to name unknown fleet frames",
    ),
}
COMMAND_MODULES = tuple(module for module, _help in COMMANDS.values())


def load(name: str) -> ModuleType:
    """The module of the command NAME (a key of COMMANDS)."""
    return import_module(f"{__name__}.{COMMANDS[name][0]}")


def load_all() -> list[ModuleType]:
    return [load(name) for name in COMMANDS]


def named(argv: list[str]) -> str | None:
    """The command argv names, or None (--help, --version, a typo)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def after_global_options(argv: list[str]) -> list[str]:
    """argv from the subcommand on: `--store S top` names `top` as `top --store S` does."""
    i = 0
    while i < len(argv) and argv[i].startswith(("--store", "--quiet")):
        i += 1 if "=" in argv[i] or argv[i] == "--quiet" else 2
    return argv[i:]
