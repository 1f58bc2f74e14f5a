"""Cache footprint of hot code (`--mode cache`).

collect/memtrace.py records, for each call of one function, its ordered
instruction and data accesses; collect/cache_trace.py turns that into a Trace
(trace.py). The modules here are the projections over a Trace, each a small pure
function of it: footprint (unique cache lines), layout (struct fields hot/cold,
from DWARF), model (set-associative LRU with a next-line prefetcher), scaling
(footprint against a workload size n) and secret_variants (do accesses depend on
a secret input); calibrate measures what this machine's TLB and LLC really hold.
collect/cpu_cache.py wires them into `perfsleuth record --mode cache`; their results
are kept as one typed document per traced function (model/cpu_cache.py), which
`perfsleuth cache show` prints and the analyzers read.
"""

from collections.abc import Iterator

from ..model.cpu_cache import CacheProjections
from ..model.profile import EXACT_UNITS, Profile


def function_share(profile: Profile, function: str) -> float:
    """Fraction of the run's weight with `function` on the stack; 1.0 for a run
    without a CPU profile (a trace-only run measures nothing else)."""
    total = profile.total
    if not total or profile.unit in EXACT_UNITS:
        return 1.0
    ids = {i for i, f in enumerate(profile.frames) if f.function == function}
    inside = sum(w for stack, w, _c, _t, _s in profile.rows() if ids.intersection(stack))
    return inside / total


def traced_shares(
    profile: Profile, cache: dict[str, CacheProjections]
) -> Iterator[tuple[str, CacheProjections, float]]:
    """Each traced function with its projections and its share of the run."""
    for function, doc in cache.items():
        yield function, doc, function_share(profile, function)
