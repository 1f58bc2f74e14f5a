"""Experiments: A/B proofs on the user's own workload (compare, allocator swap, rebuilds).

runner measures interleaved runs, stats turns them into a ratio, a confidence
interval and a verdict, result assembles and stores the documents; allocator and
build prepare the sides of their experiments; verify runs them for advise --verify.
"""
