"""A small store for the UI tests: two runs of a program with threads, off-CPU
states, a hostile C++ symbol name, findings, an experiment and source files."""

from __future__ import annotations

import os
from pathlib import Path

from perfsleuth.model.profile import PYTHON_DSO_PREFIX, Frame, Profile, ProfileBuilder, Thread
from perfsleuth.model.run import Recording, RunInfo
from perfsleuth.store.runs import Store

HOSTILE = "operator<<<script>alert(1)</script>"
ENGINE = "src/engine.cc"
ENGINE_SOURCE = "\n".join(
    [
        "#include <vector>",
        "// engine: the hot loop of the test program",
        *[f"int step_{i}(int x) {{ return x * {i} + 1; }}" for i in range(3, 11)],
        "int compute_hot(std::vector<int>& v) {",  # line 11
        "  int sum = 0;",
        "  for (int x : v) sum += step_3(x);  // the hot line",  # line 13
        "  return sum;",
        "}",
        "void parse_input() {}",
        "int main() { return 0; }",
    ]
)

MAIN = Frame("main", "/usr/bin/app", ENGINE, 17)
RUN = Frame("run_engine", "/usr/bin/app", ENGINE, 16)
HOT = Frame("compute_hot", "/usr/bin/app", ENGINE, 13)
HOT_SUM = Frame("compute_hot", "/usr/bin/app", ENGINE, 12)
PARSE = Frame("parse_input", "/usr/bin/app", ENGINE, 16, inlined=True)
MALLOC = Frame("malloc", "/usr/lib/x86_64-linux-gnu/libc.so.6")
SHOUT = Frame(HOSTILE, "/usr/bin/app", "src/leak.cc", 3)
FUTEX = Frame("futex_wait", "[kernel]", kernel=True)


def _profile(hot: float) -> Profile:
    builder = ProfileBuilder(unit="samples")
    workers = [Thread(tid=200 + i, pid=200, name=f"worker-{i}") for i in range(2)]
    plan = [
        ([HOT, RUN, MAIN], hot, "running"),
        ([HOT_SUM, RUN, MAIN], hot / 4, "running"),
        ([MALLOC, HOT, RUN, MAIN], 120, "running"),
        ([PARSE, RUN, MAIN], 200, "running"),
        ([SHOUT, RUN, MAIN], 60, "running"),
        ([FUTEX, RUN, MAIN], 150, "mutex"),
    ]
    for i, (frames, weight, state) in enumerate(plan):
        builder.add(frames, weight, count=int(weight), thread=workers[i % 2], state=state)
    return builder.build()


FINDINGS = [
    {
        "rule": "allocator.glibc",
        "kind": "allocator",
        "title": "12% of CPU time is in glibc malloc/free",
        "function": "compute_hot",
        "dso": "/usr/bin/app",
        "file": ENGINE,
        "line": 13,
        "share": 0.12,
        "estimated_gain": 0.05,
        "confidence": 0.8,
        "evidence": ["malloc 6.1% self", "free 4.0% self"],
        "suggestion": "Preload mimalloc; no code change needed",
        "fix": {"command": "LD_PRELOAD=libmimalloc.so.2 ./app"},
        "details": {
            "self_share": 0.061,
            "saving_range": [0.02, 0.05],
            "rule_origin": "rules/library.toml",
            "code_change": False,
        },
    },
    {
        "rule": "vectorize.missed",
        "kind": "missed-vectorization",
        "title": f"loop in {HOSTILE} not vectorized",
        "function": HOSTILE,
        "file": "src/leak.cc",
        "line": 3,
        "share": 0.04,
        "estimated_gain": 0.01,
        "confidence": 0.4,
        "evidence": ["remark: loop not vectorized: <b>unsafe</b> dependence"],
        "suggestion": "Mark the pointers __restrict__",
    },
]

EXPERIMENT = {
    "what": "allocator",
    "ratio": 1.42,
    "ci95": [1.35, 1.5],
    "raw": {
        "glibc": {"runs": [{"wall_s": 1.0 + i / 100, "exit_status": 0} for i in range(6)]},
        "mimalloc": {"runs": [{"wall_s": 0.7 + i / 100, "exit_status": 0} for i in range(6)]},
    },
}


def add_other_run(store: Store) -> None:
    """Run 3: a wall-clock run of another program, in ns; not comparable with runs 1 and 2.
    Its request handler is a Python function (as py-spy reads one), so the flame graph
    has a Python frame to colour."""
    builder = ProfileBuilder(unit="ns")
    serve = Frame("serve_forever", "/usr/bin/server")
    handler = Frame("handle_request", f"{PYTHON_DSO_PREFIX}app]", "/srv/app.py", 12)
    builder.add([serve], 8_029_117_580.0, count=900)
    builder.add([handler, serve], 1_000_000_000.0, count=100)
    info = RunInfo(command="./server --port 8080", cwd="/", mode="wall")
    run = store.add_run(info, Recording(builder.build(), duration_s=9.0))
    store.put_document(run.id, "findings", "advisor", [])  # advised, nothing found


def _measured(walls: list[float]) -> list[dict]:
    return [{"wall_s": w, "user_s": round(w * 0.9, 3), "exit_status": 0} for w in walls]


# `perfsleuth try allocator` with --runs 5: a 1.4x ratio, but too few runs to claim it.
TRY_EXPERIMENT = {
    "metric": "wall_s",
    "baseline": {"command": "./app --input big.txt", "runs": 5, "failed": 0},
    "variants": [
        {
            "name": "mimalloc",
            "verdict": "same",
            "ratio": 1.4,
            "ci95": [1.081, 1.955],
            "runs": 5,
            "p_value": 0.0625,
            "summary": {"command": "./app --input big.txt", "runs": 5, "failed": 0},
        }
    ],
    "failed": [],
    "warmup": 1,
    "raw": {
        "baseline": {
            "command": ["./app"],
            "env": {},
            "runs": _measured([1.30, 1.52, 1.41, 1.62, 1.47]),
            "warmup": _measured([1.9]),
        },
        "mimalloc": {
            "command": ["./app"],
            "env": {"LD_PRELOAD": "libmimalloc.so.2"},
            "runs": _measured([1.05, 0.90, 1.20, 0.85, 1.10]),
            "warmup": _measured([1.5]),
        },
    },
}


def make_sources(root: Path) -> Path:
    """A source tree with the engine and a symlink that points outside it."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / ENGINE).write_text(ENGINE_SOURCE + "\n")
    secret = root.parent / "secret.txt"
    secret.write_text("TOP SECRET outside the source root\n")
    leak = root / "src" / "leak.cc"
    if not leak.is_symlink():
        os.symlink(secret, leak)
    return root


def make_store(base: Path) -> tuple[Store, Path]:
    sources = make_sources(base / "project")
    store = Store(base / "store")
    for hot in (900.0, 300.0):
        info = RunInfo(command="./app --input big.txt", cwd=str(sources), mode="cpu")
        store.add_run(info, Recording(_profile(hot), duration_s=1.5))
    store.put_document(2, "findings", "advisor", FINDINGS)
    store.put_document(2, "experiment", "try-allocator-1", EXPERIMENT)
    store.put_document(0, "experiment", "try-allocator-2", TRY_EXPERIMENT)
    return store, sources
