"""The advisor: builds the analyzers' Context for a stored run, runs every
analyzer, ranks the findings (rank.py) and stores them with the run.

Source roots come from --src when given (each must exist), else from the
DW_AT_comp_dir of the run's own binaries; compile_commands.json is taken from
--compile-commands or found next to a source root or the run's folder.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from . import rank
from .analyzers import DEEP_BUDGET, DEEP_TUS, AnalyzerOptions, Context, discover
from .binaries import binary_at
from .binaries.packaged import is_packaged
from .collect.run_facts import is_own_command, working_root
from .collect.sampling_gap import gap_warning
from .errors import UserError
from .experiments.verify import Trial, verify_finding
from .model.findings import Finding
from .model.profile import Profile
from .model.run import LoadedRun, RunInfo
from .rules import load_rules
from .static_analysis.cpu_limits import cpu_seconds
from .store.runs import Store
from .views import documents

COMPILE_DB = "compile_commands.json"
VERIFY_AT_MOST = 5
VERIFIED_CONFIDENCE = 0.95

# Runs stored before RunInfo.source told attached runs apart have source "record" and
# record.attached_label's label: `--pid 4242` or `python3 app.py (pid 4242)`.
ATTACHED_LABEL = re.compile(r"^--pid \d+$| \(pid \d+\)$")


@dataclass
class AdviseOptions:
    src: list[str] = field(default_factory=list)
    compile_commands: str | None = None
    rules: list[str] = field(default_factory=list)
    show_all: bool = False
    verify: bool = False
    build: str | None = None  # shell command that rebuilds the program into $OUT (--verify)
    deep_tus: int = DEEP_TUS
    deep_budget: float | None = DEEP_BUDGET  # CPU seconds; None: no bound


def advise(
    store: Store,
    run_id: int,
    options: AdviseOptions,
    *,
    profile: Profile | None = None,
    info: RunInfo | None = None,
) -> documents.Advice:
    """The run's ranked findings (rank.Advice's JSON); the findings are stored with it."""
    started = cpu_seconds()  # the analysis' budget counts loading the run too
    loaded = store.load_run(run_id)
    info = info or loaded.info
    profile = profile if profile is not None else loaded.profile
    ctx = build_context(store, info, profile, options, loaded)
    ctx.started_cpu = started
    findings = run_analyzers(ctx)
    if options.verify:
        verify(rank.rank(findings, show_all=options.show_all).shown[:VERIFY_AT_MOST], ctx, store)
    advice = rank.advice(
        str(run_id),
        findings,
        show_all=options.show_all,
        notes=ctx.notes,
        src_roots=[str(p) for p in ctx.src_roots],
    )
    kept = [p.finding.to_json() for p in advice.shown + advice.hidden]
    store.put_document(run_id, "findings", "advisor", kept)
    return advice.to_json()


def check_options(options: AdviseOptions) -> None:
    """Raise UserError for a missing --src/--compile-commands or a bad rules file."""
    _src_roots(options.src, [], Profile())
    _compile_commands(options.compile_commands, [], None)
    load_rules([Path(p) for p in options.rules])


def build_context(
    store: Store, info: RunInfo, profile: Profile, options: AdviseOptions, loaded: LoadedRun
) -> Context:
    """The analyzers' context: the loaded run (its counts and cache projections), never
    the store, which only verification (experiments/, through its Trial) writes to."""
    rule_files = [Path(p) for p in options.rules]
    store_rules = store.root / "rules.toml"
    if store_rules.is_file():
        rule_files.insert(0, store_rules)
    binaries = [b for b in info.dsos if b.get("path") and os.path.isfile(b["path"])]
    roots = _src_roots(options.src, binaries if is_own_command(info) else [], profile)
    own = working_root(info)
    return Context(
        profile=profile,
        run=info,
        counts=loaded.exact(),
        cache=loaded.cache,
        src_roots=roots,
        compile_commands=_compile_commands(options.compile_commands, roots, own),
        binaries=binaries,
        options=AnalyzerOptions(
            rules=load_rules(rule_files),
            show_all=options.show_all,
            build=options.build,
            deep_tus=options.deep_tus,
            deep_budget=options.deep_budget,
        ),
    )


def _src_roots(given: list[str], binaries: list[dict], profile: Profile) -> list[Path]:
    """--src, or the compile dirs of the binaries of a run of the user's own command
    (an imported run's binaries are not looked into: its file chose them)."""
    if given:
        roots = []
        for item in given:
            path = Path(item).expanduser()
            if not path.is_dir():
                raise UserError(f"--src {item}: no such folder; give the root of the sources")
            roots.append(path.resolve())
        return roots
    sampled = {f.dso for f in profile.frames}
    found: dict[str, None] = {}
    for binary in binaries:
        path = binary["path"]
        if os.path.basename(path) in sampled and not (is_packaged(path) or path[:1] == "["):
            found.update(dict.fromkeys(comp_dirs(path)))
    return [Path(d) for d in found if os.path.isdir(d)]


def comp_dirs(path: str) -> tuple[str, ...]:
    """The DW_AT_comp_dir of every compile unit of a binary."""
    binary = binary_at(path)
    units = binary.compile_units if binary else ()
    return tuple(dict.fromkeys(u.comp_dir for u in units if u.comp_dir))


def _compile_commands(given: str | None, roots: list[Path], cwd: Path | None) -> Path | None:
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise UserError(f"--compile-commands {given}: no such file")
        return path.resolve()
    starts = [*roots, *([cwd] if cwd else [])]
    for start in starts:
        for folder in [start, *list(start.parents)[:3]]:
            for candidate in (folder / COMPILE_DB, folder / "build" / COMPILE_DB):
                if candidate.is_file():
                    return candidate
    return None


def run_analyzers(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for name, analyze in discover().items():
        try:
            findings.extend(analyze(ctx))
        except UserError:
            raise
        except Exception as e:  # one broken analyzer must not hide the others' findings
            ctx.notes.append(f"the {name} analyzer failed ({type(e).__name__}: {e})")
    if ctx.profile.unit == "instructions":
        for finding in findings:
            in_instructions(finding)
    if is_sampled(ctx):
        weigh_support(findings, ctx)
    gap = gap_warning(ctx.profile, ctx.run.meta)
    if gap:
        ctx.notes.append(gap)
    return findings


# Modes whose profile counts statistical samples (perf's, py-spy's, wall mode's instants);
# offcpu's switches and count mode's instructions are each measured, not drawn.
SAMPLED_MODES = ("cpu", "wall", "python", "python-native")


def is_sampled(ctx: Context) -> bool:
    return ctx.profile.unit == "samples" or ctx.run.mode in SAMPLED_MODES


def weigh_support(findings: list[Finding], ctx: Context) -> None:
    """Each finding's share in samples (rank hides one that rests on too few), and a note
    when the whole run is too short for its shares to hold: a `sed` that failed at once
    gave 2 samples, and "50% of CPU time is inside mmap" from one of them."""
    samples = ctx.profile.num_samples
    for finding in findings:
        finding.details.setdefault(rank.SUPPORT, round(finding.share * samples))
    if 0 < samples < rank.FEW_RUN_SAMPLES:
        ctx.notes.append(
            f"the run has only {samples} sample(s): each share may be off by "
            f"{100 * rank.share_margin(0.5, samples):.0f} points or more; record a longer "
            "workload (or a higher --freq) for findings to rest on"
        )


# What the analyzers say of a sampled run's time, as said of a count run's instructions.
OF_INSTRUCTIONS = (
    ("of CPU time is ", "of the instructions are "),
    ("of CPU time runs ", "of the instructions run "),
    ("of CPU time", "of the instructions"),
    ("of the run's samples", "of the run's instructions"),
)


def in_instructions(finding: Finding) -> None:
    """A count run's finding in its own unit: its shares are of exact instruction
    counts, not of CPU time or samples (the estimate's basis too: brotli's build-flags
    hint said "5.9% of CPU time is in the own code of functions called from other
    compile units" of a count run)."""
    for said, meant in OF_INSTRUCTIONS:
        finding.title = finding.title.replace(said, meant)
        finding.evidence = [line.replace(said, meant) for line in finding.evidence]
        finding.gain_basis = finding.gain_basis.replace(said, meant)


def verify(findings: list[Finding], ctx: Context, store: Store | None = None) -> None:
    """Attach the proofs of the experiments' verification registry to the findings,
    their measurements kept in `store`; a measured speed-up raises a finding's confidence."""
    trial = Trial(ctx, _recorded_command(ctx), store)
    for finding in findings:
        result = verify_finding(finding, trial)
        if result:
            finding.verified = result
            low = (result.get("ci95") or [0.0])[0]
            if low > 1.0:  # a measured speed-up whose whole interval is a win
                finding.confidence = max(finding.confidence, VERIFIED_CONFIDENCE)


def _recorded_command(ctx: Context) -> list[str]:
    """The run's command, to run again; empty (and a note) unless it is the user's own
    (an attached run's command is a label such as `python3 app.py (pid 4242)`)."""
    own = is_own_command(ctx.run) and not ATTACHED_LABEL.search(ctx.run.command)
    command = shlex.split(ctx.run.command) if own else []
    if not command:
        ctx.notes.append(
            "verification needs the recorded command; this run attached to a PID or was imported"
        )
    return command
