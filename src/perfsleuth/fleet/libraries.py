"""`fleet libraries`: where replaceable libraries are loaded, and where they are hot.

The reference texts' recipe: scan what is installed or loaded (here the libraries the
agents saw in /proc/PID/maps), match it against the library rules, then keep what the
profiler says is hot. A library loaded on a thousand hosts but never on a stack is not
worth an alert; `hot` says which are (the fleet share of the rule's code in the range
reaching the rule's own min_share). `--where` narrows both: the share, and the
inventory by host, service, exe (the program) and user labels; pid, comm, build_id and
cgroup are per sample, not in a window's marker, so they narrow the share only.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ..analyzers.library_match import match_rules
from ..model.fleet import LABELS
from ..rules import Rule, load_rules
from ..store.fleet import FleetStore
from ..views import documents
from . import queries
from .engine import Engine
from .filters import TYPE_KEY, Condition, holds, parse

# A CPython extension module's file name, and the folder of the interpreter's own.
CPYTHON_MODULE = ".cpython-"
STDLIB_MODULES = "/lib-dynload/"
PER_SAMPLE = {*LABELS, TYPE_KEY} - {"host", "service", "exe"}  # not in a window's marker


def libraries(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None = None,
    rule_files: list[Path] | None = None,
    hot_only: bool = False,
    engine: Engine | None = None,
) -> documents.FleetLibrariesDoc:
    """`{"libraries": [...], "windows": n}`: per rule and library file, the hosts,
    services and programs that load it, and the rule's fleet share and heat."""
    rules = [r for r in load_rules(rule_files or []) if r.dsos]
    markers = _narrowed(store.inventory(start, end), parse(where))
    loaded = _loaded(markers, rules)
    shares = _shares(store, start, end, where, rules, engine) if loaded else {}
    rows: list[documents.FleetLibrary] = []
    for (rule_id, library), seen in sorted(loaded.items()):
        rule = next(r for r in rules if r.id == rule_id)
        share = shares.get(rule_id, 0.0)
        hot = share >= rule.min_share
        if hot_only and not hot:
            continue
        rows.append(
            {
                "rule": rule_id,
                "library": library,
                "replacement": rule.replacement,
                "hosts": sorted(seen["hosts"]),
                "services": sorted(seen["services"]),
                "programs": sorted(seen["programs"]),
                "share": share,
                "hot": hot,
            }
        )
    rows.sort(key=lambda r: (-r["share"], -len(r["hosts"]), r["rule"], r["library"]))
    return {
        "from": start,
        "to": end,
        "where": where or "",
        "windows": len(markers),
        "libraries": rows,
    }


def _narrowed(markers: list[dict], conditions: list[Condition]) -> list[dict]:
    """The markers with only the programs --where keeps; windows keeping none left out."""
    kept = []
    for info in markers:
        programs = {
            exe: paths for exe, paths in info["libraries"].items() if _kept(info, exe, conditions)
        }
        if programs:
            kept.append({**info, "libraries": programs})
    return kept


def _kept(info: dict, exe: str, conditions: list[Condition]) -> bool:
    window = {"host": info.get("host", ""), "service": info.get("service", ""), "exe": exe}
    values = {**info.get("labels", {}), **window}
    return all(holds(c, values.get(c.key, "")) for c in conditions if c.key not in PER_SAMPLE)


def _loaded(markers: list[dict], rules: list[Rule]) -> dict[tuple[str, str], dict[str, set]]:
    """(rule id, library path) -> the hosts, services and programs that load it."""
    loaded: dict[tuple[str, str], dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for info in markers:
        for exe, paths in info["libraries"].items():
            for path in paths:
                for rule in rules:
                    if _is_library(path, rule):
                        seen = loaded[(rule.id, path)]
                        seen["hosts"].add(info.get("host", ""))
                        seen["services"].add(info.get("service", ""))
                        seen["programs"].add(exe)
    return loaded


def _is_library(path: str, rule: Rule) -> bool:
    """Whether the file at `path` is the rule's library: its name matches, and a CPython
    extension module is the interpreter's own (in lib-dynload), not a package's module
    of the same name (pyarrow's _json.cpython-*.so is not Python's json)."""
    name = path.rsplit("/", 1)[-1]
    if not any(p.search(name) for p in rule.dsos):
        return False
    return CPYTHON_MODULE not in name or STDLIB_MODULES in path


def _shares(
    store: FleetStore,
    start: float,
    end: float,
    where: str | None,
    rules: list[Rule],
    engine: Engine | None,
) -> dict[str, float]:
    """Each rule's inclusive share of the fleet's CPU time in the range."""
    profile = queries.profile(store, start, end, where, engine)
    total = profile.total
    if total <= 0:
        return {}
    matches = match_rules(profile, rules).items()
    return {rule_id: m.inclusive / total for rule_id, m in matches if not m.is_job()}
