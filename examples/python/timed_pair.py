"""Two hot Python functions that time themselves: the shares a profiler should give.

`python timed_pair.py SECONDS` alternates crunch() (integer arithmetic) and
spell() (string formatting), about evenly in CPU time, until SECONDS of user CPU have
gone by, and prints one JSON line: each function's user CPU time (getrusage of
the thread, microseconds, the time perf's user-space samples count) and the
thread's user CPU time from the first call to the end.
"""

import json
import resource
import sys


def user_cpu() -> float:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_utime


def crunch(n: int) -> int:
    total = 0
    for i in range(n):
        total += (i * i) % 7
    return total


def spell(n: int) -> int:
    length = 0
    for i in range(n):
        length += len(f"w{i % 97}-{i}")  # nothing left to free when it returns
    return length


def main(seconds: float) -> dict:
    spent = {"crunch": 0.0, "spell": 0.0}
    start = user_cpu()
    while user_cpu() - start < seconds:
        for name, work, n in (("crunch", crunch, 1_000_000), ("spell", spell, 300_000)):
            before = user_cpu()
            work(n)
            spent[name] += user_cpu() - before
    return {**spent, "user": user_cpu() - start}


if __name__ == "__main__":
    print(json.dumps(main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)))
