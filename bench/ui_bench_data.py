"""A synthetic run as large as the UI's speed target: 1,000,000 samples, >= 100,000 stacks.

Stacks are random walks down a fixed call graph (each function calls a few
others, some far more often than the rest), so prefixes are shared the way
they are in real programs and the flame graph has realistic width and depth.
"""

from __future__ import annotations

import random

from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread

FUNCTIONS = 4000
DSOS = ("/usr/bin/bigapp", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/libbig.so")
STATES = ("running", "running", "running", "mutex", "io")


def big_profile(samples: int = 1_000_000, stacks: int = 110_000, seed: int = 7) -> Profile:
    rng = random.Random(seed)
    builder = ProfileBuilder(unit="samples", meta={"synthetic": True})
    frame_ids = [
        builder.frame_id(
            Frame(
                function=f"ns{i % 37}::Widget<{i % 11}>::op_{i}",
                dso=DSOS[i % len(DSOS)],
                file=f"src/mod{i % 97}.cc",
                line=10 + i % 400,
            )
        )
        for i in range(FUNCTIONS)
    ]
    callees = [rng.sample(range(1, FUNCTIONS), rng.randint(2, 6)) for _ in range(FUNCTIONS)]
    threads = [
        builder.thread_id(Thread(tid=100 + t, pid=100, name=f"worker-{t}")) for t in range(4)
    ]
    seen: set[tuple[int, ...]] = set()
    while len(seen) < stacks:
        path = [0]
        for _ in range(rng.randint(4, 34)):
            options = callees[path[-1]]
            path.append(options[min(int(rng.expovariate(1.2)), len(options) - 1)])
        seen.add(tuple(frame_ids[f] for f in reversed(path)))
    ordered = list(seen)
    weights = [1.0 / (rank + 10) ** 0.7 for rank in range(len(ordered))]
    scale = (samples - len(ordered)) / sum(weights)
    counts = [1 + int(w * scale) for w in weights]
    counts[0] += samples - sum(counts)
    for i, (stack, count) in enumerate(zip(ordered, counts, strict=True)):
        builder.add_ids(
            stack, float(count), count=count, thread_index=threads[i % 4], state=STATES[i % 5]
        )
    return builder.build()
