"""Exact instruction counts with valgrind's callgrind.

Callgrind simulates the CPU, so the counts do not depend on timing, ASLR or the
machine's load: the same binary, input and environment execute the same
instructions. What can still move them is what the program itself sees and
branches on (see docs/counts.md): the environment (its size shifts the initial
stack and changes what getenv/locale code does), argv, the working directory,
the clock, random numbers and thread scheduling. By default the target runs with
FIXED_ENV only; `keep_env` passes the caller's environment through instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..binaries import STT_FUNC, binary_at, build_id_of
from ..errors import UserError
from ..formats import callgrind
from ..formats.tool_output.counts import built_before, encode_counts
from ..model.counts import Counts, stale_sources
from ..model.profile import Profile
from ..model.run import Recording, StoredDocument
from ..symbols.demangle import demangle_all
from ..symbols.entries import counted_entries
from . import target
from .options import RecordOptions
from .target import Target

# The whole environment of a counted run unless the user asks to keep theirs.
FIXED_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}
# Lines of valgrind's log that say why it could not run the program.
FAILURE_MARKERS = (
    "unhandled instruction bytes",
    "Unrecognised instruction",
    "valgrind: ",
    "Fatal error",
    "FATAL",
    "cannot execute",
)


@dataclass
class CountRecording:
    out: Path  # the callgrind.out file
    exit_status: int | None
    duration_s: float
    argv: list[str]  # the valgrind command line that produced it
    executable: str  # absolute path of the program counted
    fixed_env: bool


def valgrind_binary() -> str:
    found = shutil.which("valgrind")
    if found is None:
        raise UserError("valgrind is not installed; install it with `apt-get install valgrind`")
    return found


def resolve_program(cmd: list[str]) -> str:
    """The absolute path of the program CMD starts, or a clear error."""
    return os.path.abspath(target.check_command(cmd))


def callgrind_args(workdir: Path, *, cache_sim: bool, only: str | None) -> list[str]:
    """Children are traced too, so that a wrapper which execs the real program (a
    libtool or pyenv script) is followed; every process writes its own files."""
    args = [
        "--tool=callgrind",
        f"--callgrind-out-file={workdir}/callgrind.out.%p",
        f"--log-file={workdir}/valgrind.log.%p",
        "--trace-children=yes",
        "--dump-instr=yes",
        "--dump-line=yes",
        "--compress-strings=yes",
    ]
    if cache_sim:
        args.append("--cache-sim=yes")
    if only:
        args += [f"--toggle-collect={pattern}" for pattern in toggle_patterns(only)]
    return args


def toggle_patterns(function: str) -> list[str]:
    """Callgrind names C++ functions with their parameter list and demangles mangled
    names, so `ns::f` must also match `ns::f(int)` and `_ZN2ns1fEi` its demangled form."""
    patterns = [function]
    if "(" not in function and not function.endswith("*"):
        patterns.append(f"{function}(*")
    demangled = demangle(function)
    if demangled != function:
        patterns.append(demangled)
    return patterns


def demangle(name: str) -> str:
    return demangle_all([name])[0] if name.startswith(("_Z", "_R")) else name


def record(
    cmd: list[str],
    workdir: Path,
    *,
    cache_sim: bool = False,
    only: str | None = None,
    keep_env: bool = False,
) -> CountRecording:
    """Run CMD under callgrind; stdio passes through, valgrind's log goes to a file."""
    valgrind = valgrind_binary()
    executable = resolve_program(cmd)
    # A bare name is looked up in the user's PATH, not in the fixed environment's.
    program = cmd[0] if "/" in cmd[0] else executable
    options = callgrind_args(workdir, cache_sim=cache_sim, only=only)
    argv = [valgrind, *options, "--", program, *cmd[1:]]
    env = dict(os.environ) if keep_env else dict(FIXED_ENV)
    started = time.monotonic()
    pid, status = _run(argv, env)
    elapsed = time.monotonic() - started
    out = workdir / f"callgrind.out.{pid}"
    reason = failure_reason(workdir / f"valgrind.log.{pid}")
    if not out.exists() or (status != 0 and reason and "instruction" in reason):
        raise UserError(
            f"valgrind could not run {cmd[0]}: {reason or f'exit status {status}'}; "
            "count mode needs a program valgrind supports (use --mode cpu instead)"
        )
    if out.stat().st_size == 0:
        raise UserError(
            f"callgrind counted nothing in {cmd[0]}: it ended without exiting normally "
            "(e.g. killed by a signal valgrind could not report); run it under plain "
            f"`valgrind --tool=callgrind {shlex.join(cmd)}` to see why"
        )
    _note_children(workdir, pid)
    counted = counted_program(out, executable)
    return CountRecording(out, status, elapsed, argv, counted, not keep_env)


def counted_program(out: Path, started: str) -> str:
    """The program whose instructions `out` counts: the one its `cmd:` line names when
    the program started (`started`) executed another (env, a libtool or pyenv wrapper).
    `env LD_PRELOAD=... ./tcc` was stored as env's run, with env's build-id: `gate` said
    the baseline's tcc was another build, and tcc's functions were not placed at their
    entries (symbols/entries.py reads the program's own symbols)."""
    cmd = ""
    with out.open(errors="replace") as fh:
        for line in fh:  # the header's lines, not the whole file's
            if line.startswith("cmd:"):
                cmd = line[4:].strip()
            if cmd or line.startswith(("ob=", "fl=", "fn=")):
                break
    named = cmd.split(maxsplit=1)[0] if cmd else ""
    path = os.path.abspath(named) if named else ""
    if not path or path == started or not os.path.isfile(path):
        return started
    print(
        f"perfsleuth: note: {os.path.basename(started)} executed {named}: the run counts {path}",
        file=sys.stderr,
    )
    return path


def _note_children(workdir: Path, pid: int) -> None:
    """Say that children were left out, and which one to count if it did more work."""
    children = [p for p in workdir.glob("callgrind.out.*") if p.name != f"callgrind.out.{pid}"]
    if not children:
        return
    print(
        f"perfsleuth: note: {len(children)} child process(es) ran under valgrind too; "
        "only the main process is counted",
        file=sys.stderr,
    )
    main_total, _ = _headline(workdir / f"callgrind.out.{pid}")
    busiest_total, busiest_cmd = max(_headline(child) for child in children)
    if busiest_total > main_total:
        print(
            f"perfsleuth: note: a child executed more instructions ({busiest_total:,} against "
            f"{main_total:,}); to count it, record it directly: "
            f"perfsleuth record --mode count -- {busiest_cmd}",
            file=sys.stderr,
        )


def _headline(out: Path) -> tuple[int, str]:
    """(total of the first event, command) from a callgrind.out file's header lines."""
    total, cmd = 0, ""
    with out.open(errors="replace") as fh:
        for line in fh:
            if line.startswith("cmd:"):
                cmd = line[4:].strip()
            elif line.startswith(("summary:", "totals:")) and line.split()[1:]:
                total = max(total, int(line.split()[1]))
    return total, cmd


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
    """(pid, exit status) of the counted process; valgrind runs it in its own process,
    and ends as it does (a guest killed by a signal kills valgrind with it)."""
    proc = target.spawn(argv, env=env)
    counted = Target(pid=proc.pid, proc=proc)
    counted.wait(None)  # forwards SIGINT, SIGTERM and SIGHUP to valgrind
    status = counted.exit_status
    assert status is not None
    return counted.pid, status


def failure_reason(log: Path) -> str:
    """The first line of valgrind's log that says why the program could not run."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        text = line.split("== ", 1)[-1].strip() if line.startswith("==") else line.strip()
        if any(marker in text for marker in FAILURE_MARKERS):
            return text.removeprefix("valgrind: ")
    return ""


def record_count(options: RecordOptions, cmd: list[str], workdir: Path) -> Recording:
    """The `--mode count` recorder: a Profile for the stacks, the exact counts as a document."""
    if options.pid is not None:
        raise UserError("count mode runs the program under valgrind; it cannot attach to --pid")
    options.progress.phase(f"counting the instructions of {cmd[0]} under callgrind")
    rec = record(
        cmd, workdir, cache_sim=options.cache_sim, only=options.only, keep_env=options.keep_env
    )
    options.progress.phase("reading callgrind's counts")
    # once, for the stacks and the counts document (twice for same-named functions)
    parsed = callgrind.apart(rec.out, callgrind.parse(rec.out))
    placed = counted_entries(rec.executable, parsed.self_costs)
    if placed:  # each function's own line, not a helper's inlined at its entry
        parsed.meta["entries"] = {fn[1]: list(site) for fn, site in placed.items()}
    if started_threads(parsed.self_costs):
        print(f"perfsleuth: note: {THREADS_NOTE}", file=sys.stderr)
    profile = callgrind.profile_of(parsed)
    if options.only and not profile.total:
        raise UserError(only_not_collected(options.only, rec.executable))
    profile.dsos = [{"path": ob, "build_id": build_id(ob)} for ob in objects(profile)]
    meta = {
        "recorder": "callgrind",
        "executable": rec.executable,
        "build_id": build_id(rec.executable),
        "cache_sim": options.cache_sim,
        "only": options.only,
        "fixed_env": rec.fixed_env,
        "valgrind_argv": rec.argv,
    }
    counted = encode_counts(rec.out, parsed=parsed)
    stale = built_before(counted.counts, Path.cwd())
    if stale:  # annotate says it again of the files it lists (views/annotate.py)
        counted.counts.meta["built_before"] = [list(pair) for pair in stale]
    for warning in stale_sources(stale):
        print(f"perfsleuth: warning: {warning}", file=sys.stderr)
    counts = StoredDocument(Counts.KIND, Counts.NAME, counted)
    return Recording(
        profile,
        exit_status=rec.exit_status,
        duration_s=rec.duration_s,
        meta=meta,
        documents=[counts],
    )


THREADS_NOTE = (
    "the program started threads: valgrind runs one at a time, and where they wait for "
    "each other their order moves the counts a little from run to run (zstd's I/O "
    "thread: up to 1,600 instructions of 24 M between 5 runs, in its lock and "
    "condition-variable calls); a change smaller than that needs a single-threaded workload"
)


def started_threads(self_costs: Iterable[tuple[str, str]]) -> bool:
    """Whether a counted function is glibc's thread start (start_thread): the program
    ran more than one thread."""
    return any(fn == "start_thread" for _ob, fn in self_costs)


def objects(profile: Profile) -> list[str]:
    return sorted({f.dso for f in profile.frames if f.dso.startswith("/")})


def build_id(path: str) -> str:
    return build_id_of(path)


def only_not_collected(function: str, executable: str) -> str:
    binary = binary_at(executable)
    if binary is not None and not binary.info.has_symbols:
        return (
            f"--only {function}: {executable} is stripped (it has no symbol table), so "
            "callgrind cannot find its functions by name; record a build that was not "
            "stripped (no `strip`, no -s)"
        )
    if defines_function(executable, function):
        return (
            f"--only {function}: {Path(executable).name} has this function but the run never "
            "called it; pick a function the workload reaches"
        )
    return (
        f"--only {function}: no function of that name in {executable} was called; "
        f"check the name with `nm -C {executable} | grep {function}`"
    )


def defines_function(executable: str, function: str) -> bool:
    """Whether the executable's symbol table names FUNCTION (raw or demangled)."""
    names = function_names(executable)
    wanted = {function, demangle(function)}
    plain = {name.split("(")[0] for name in demangle_all(names)}
    return bool(wanted & (set(names) | plain))


def function_names(path: str) -> list[str]:
    binary = binary_at(path)
    return [s.name for s in binary.symbols(types=frozenset({STT_FUNC}))] if binary else []
