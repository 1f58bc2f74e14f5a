"""Cache footprint of hot code (`--mode cache`).

collect/memtrace.py records, for each call of one function, its ordered
instruction and data accesses. The modules here are the projections over that
recording, each a small pure function of it: footprint (unique cache lines),
layout (struct fields hot/cold, from DWARF), model (set-associative LRU with a
next-line prefetcher), scaling (footprint against a workload size n) and
constant_time (do accesses depend on a secret input). recorder.py wires them into
`perfsleuth record --mode cache`; their results are stored as documents of kind
DOCUMENT_KIND, which `perfsleuth cache show` prints and the analyzers read.
"""

from ..model.profile import Profile

DOCUMENT_KIND = "cache"


def function_share(profile: Profile, function: str) -> float:
    """Fraction of the run's weight with `function` on the stack; 1.0 for a run
    without a CPU profile (a trace-only run measures nothing else)."""
    total = profile.total
    if not total or profile.unit == "instructions":
        return 1.0
    ids = {i for i, f in enumerate(profile.frames) if f.function == function}
    inside = sum(w for stack, w, _c, _t, _s in profile.rows() if ids.intersection(stack))
    return inside / total
