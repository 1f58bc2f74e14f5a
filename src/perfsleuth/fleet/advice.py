"""`fleet advise`: the advisor's rules on the fleet TopN, ranked by CPU cores saved.

context-for-ranking: the analyzers that need nothing but a profile (library rules:
allocator, zlib, JSON, node maps, exceptions, ...; missing symbols) run on the fleet
profile of the range, so a finding's share is fleet-wide; the label weights then say
which services and hosts its stacks run on. ranking-for-analysis: the analyses that
need the binary (build flags) run only on the hottest build-ids, and only where a file
with that build-id is on this machine; the rest is said in `notes`. A measured `try`
result handed back with --verified replaces the estimate where it measured (verified.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import rank
from ..analyzers import AnalyzerOptions, Context, build_flags, library_match, missing_symbols
from ..errors import UserError
from ..model.findings import Finding
from ..model.fleet import DEFAULT_TYPE
from ..model.profile import Frame, Profile
from ..model.run import RunInfo
from ..rules import Rule, load_rules, with_evidence
from ..store.fleet import FleetStore
from ..symbols import build_id_of, find_dso
from . import labels, queries, verified
from .engine import Engine
from .filters import profile_type
from .labels import LabelWeights, Share
from .verified import Measured

PROFILE_ANALYZERS = (library_match.analyze, missing_symbols.analyze)
HOT_BUILD_IDS = 3  # build-ids the binary analyses look at, hottest first
APPLIES_SHARE = 0.01  # a service or host where the finding's code is below this is not named
HOSTS_SHOWN = 20
SAME_HOT_SPOT = 0.5
WHO = ("service", "host", "exe", "build_id")
SOURCE_NOTE = (
    "source analyses (aliasing, missed vectorization) need the program's sources: "
    "run `perfsleuth advise --src DIR` on a recording of the service named"
)


@dataclass
class FleetAdvice:
    """What `fleet advise` needs besides the range and filter."""

    core_cost: float | None = None  # money per core and month
    rules: list[Path] = field(default_factory=list)
    show_all: bool = False
    hot_build_ids: int = HOT_BUILD_IDS
    engine: Engine | None = None  # None: DuckDB
    verified: list[Measured] = field(default_factory=list)  # `try` results to attach


def advise(
    store: FleetStore, start: float, end: float, where: str | None, options: FleetAdvice
) -> dict:
    """`{"findings": [...], "notes": [...]}`: each finding in the shape of docs/findings.md with
    services, hosts, cores_saved (and money_per_month with a core cost), by cores saved."""
    if (kind := profile_type(where)) != DEFAULT_TYPE:
        raise UserError(f"fleet advise reads CPU profiles (cores saved), not {kind}: drop --type")
    weights = queries.stack_weights(store, start, end, where, options.engine)
    profile = queries.to_profile(weights)
    if not profile.sample_stack:
        raise UserError("no samples in this range: widen --from/--to or relax --where")
    who = labels.weights(store, start, end, where, WHO, options.engine)
    rules = load_rules(options.rules)
    ctx = Context(
        profile=profile, run=RunInfo(source="fleet"), options=AnalyzerOptions(rules=rules)
    )
    found = [f for analyze in PROFILE_ANALYZERS for f in analyze(ctx)]
    found += deep_findings(ctx, who, options.hot_build_ids)
    ranked = rank.rank(found, show_all=options.show_all)
    stack_ids = weights.stacks.column("stack_id").to_pylist()
    weight_of = dict(zip(stack_ids, profile.sample_weight, strict=True))
    rule_of = {r.id: r for r in rules}
    placed = [(f, _stacks_of(f, profile, stack_ids, rule_of)) for f in ranked.shown]
    docs = [fleet_finding(f, stacks, who, end - start, options) for f, stacks in placed]
    notes = [*ctx.notes, *verified.unattached(options.verified, docs), SOURCE_NOTE]
    return {
        "from": start,
        "to": end,
        "where": where or "",
        "cores": profile.total / 1e9 / (end - start),  # busy on average over the range
        "findings": hot_spot_order(docs, [stacks for _, stacks in placed], weight_of),
        "hidden": len(ranked.hidden),
        "notes": notes,
    }


def hot_spot_order(
    docs: list[dict], stacks: list[set[int]], weight_of: dict[int, float]
) -> list[dict]:
    """By cores saved, except that findings on the same samples (sharing more than
    SAME_HOT_SPOT of the smaller one's CPU time) are one hot spot: they rank together
    by the larger saving, the fix without a code change first (it can be tried, and
    measured with `perfsleuth try`, without touching the service). Findings that
    save nothing themselves (diagnostics) come last."""
    order = sorted(range(len(docs)), key=lambda i: (-docs[i]["cores_saved"], docs[i]["rule"]))
    spot = list(range(len(docs)))  # the index of the finding that leads each one's hot spot
    for n, i in enumerate(order):
        if not docs[i]["cores_saved"]:
            continue  # a diagnostic (missing symbols) saves nothing itself
        for j in order[:n]:
            if spot[j] == j and _same_samples(stacks[i], stacks[j], weight_of):
                spot[i] = j
                docs[i]["same_hot_spot"] = docs[j]["rule"]
                docs[j]["same_hot_spot"] = docs[i]["rule"]
                break
    rank_of = {i: n for n, i in enumerate(order)}

    def key(i: int) -> tuple:
        code_change = bool(docs[i].get("details", {}).get("code_change", True))
        return (rank_of[spot[i]], code_change, rank_of[i])

    return [docs[i] for i in sorted(range(len(docs)), key=key)]


def _same_samples(a: set[int], b: set[int], weight_of: dict[int, float]) -> bool:
    shared = sum(weight_of[s] for s in a & b)
    smaller = min(sum(weight_of[s] for s in a), sum(weight_of[s] for s in b))
    return smaller > 0 and shared > SAME_HOT_SPOT * smaller


def deep_findings(ctx: Context, who: LabelWeights, hottest: int) -> list[Finding]:
    """Build-flag findings for the hottest build-ids whose binary is on this machine."""
    found: list[Finding] = []
    for share in [s for s in who.shares("build_id") if s.value][:hottest]:
        exe = _exe_of(who, share.value)
        path = binary_with(exe, share.value)
        if path is None:
            ctx.notes.append(
                f"build flags not checked for {exe or '?'} (build-id {share.value[:16]}): "
                "no binary with that build-id on this machine"
            )
            continue
        ctx.binaries = [{"path": path, "build_id": share.value}]
        found += build_flags.analyze(_renamed(ctx, exe, path))
    return found


def binary_with(exe: str, build_id: str) -> str | None:
    """A file with exactly this build-id: the recorded executable or a debug file found
    by build-id. (find_dso would also take the recorded path with another build-id,
    which on this machine is another build, not the one the fleet ran.)"""
    path = find_dso(exe, build_id)
    return path if path is not None and build_id_of(path) == build_id else None


def _exe_of(who: LabelWeights, build_id: str) -> str:
    rows = zip(
        who.table.column("build_id").to_pylist(),
        who.table.column("exe").to_pylist(),
        strict=True,
    )
    return next((exe for bid, exe in rows if bid == build_id and exe), "")


def _renamed(ctx: Context, exe: str, path: str) -> Context:
    """build_flags pairs frames with binaries by file name; a debug file found by
    build-id has another name than the executable's frames carry."""
    name, found = exe.rsplit("/", 1)[-1], path.rsplit("/", 1)[-1]
    if name == found:
        return ctx
    frames = [replace(f, dso=found) if f.dso == name else f for f in ctx.profile.frames]
    return replace(ctx, profile=replace(ctx.profile, frames=frames), notes=[])


def _stacks_of(
    finding: Finding, profile: Profile, stack_ids: list[int], rule_of: dict[str, Rule]
) -> set[int]:
    """The stored stack ids holding the finding's code: its rule's frames, else its DSO's."""
    rule = rule_of.get(finding.rule)
    matches = _frame_test(finding, rule and with_evidence([rule], profile.frames)[0])
    hit = [matches(f) for f in profile.frames]
    return {stack_ids[i] for i, stack in enumerate(profile.stacks) if any(hit[f] for f in stack)}


def _frame_test(finding: Finding, rule: Rule | None) -> Callable[[Frame], bool]:
    if rule is not None:
        return lambda f: rule.matches(f.function, f.dso, f.file)
    return lambda f: f.dso == finding.dso or f.dso.rsplit("/", 1)[-1] == finding.dso


def fleet_finding(
    finding: Finding, stacks: set[int], who: LabelWeights, seconds: float, options: FleetAdvice
) -> dict:
    """The finding's JSON with where it applies and what fixing it saves: its gain (a
    fraction of the fleet's CPU time) times the cores the range kept busy on average,
    or what an attached experiment measured (verified.py)."""
    doc = finding.to_json()
    busy = sum(who.table.column("cpu_ns").to_pylist()) / 1e9 / seconds
    doc["cores_saved"] = rank.gain(finding) * busy
    doc["services"] = _where(who.shares("service", stacks), "service", seconds)
    hosts = _where(who.shares("host", stacks), "host", seconds)
    doc["hosts"] = hosts[:HOSTS_SHOWN]
    doc["hosts_count"] = len(hosts)
    exes = who.shares("exe", stacks)
    if exes and exes[0].value:
        _name_program(doc, exes[0].value)
    verified.attach(doc, finding, exes, seconds, options.verified)
    if options.core_cost is not None:
        doc["money_per_month"] = doc["cores_saved"] * options.core_cost
    return doc


def _where(shares: Sequence[Share], label: str, seconds: float) -> list[dict]:
    """Values whose CPU time the finding's code is a noticeable part of: its share of
    each value's CPU time, and the cores it keeps busy there."""
    return [
        {label: s.value, "share": s.share, "cores": s.cpu_ns / 1e9 / seconds}
        for s in shares
        if s.share >= APPLIES_SHARE
    ]


def _name_program(doc: dict, exe: str) -> None:
    """Put the heaviest program running the finding's code in its fix, and hand an
    allocator finding to the experiment that measures it (`perfsleuth try allocator`)."""
    fix = doc.get("fix") or {}
    if isinstance(fix.get("command"), str):
        fix["command"] = fix["command"].replace("CMD", exe)
    if fix.get("alternatives"):
        fix["alternatives"] = [a.replace("CMD", exe) for a in fix["alternatives"]]
    if doc["kind"] == "allocator":
        fix["experiment"] = f"perfsleuth try allocator -- {exe}"
    if fix:
        doc["fix"] = fix
