"""A Python program profiled by a Pyroscope SDK: hot_a (under the tag phase=a) does about
twice the work of hot_b and keeps the last 50 of its 64 KiB buffers (memory profiling is
on where the SDK has it: pyroscope-io 1.x), its samples' pid, thread id and name reported
as labels. Usage: python_app.py SERVER APP SECONDS. Prints the CPU seconds its loop spent,
the seconds the SDK ran (for the test to check the pushed totals against) and its pid."""

import inspect
import os
import sys
import time

import pyroscope

KEPT: list[bytearray] = []


def hot_a() -> int:
    total = 0
    for i in range(200_000):
        total += i * i
    KEPT.append(bytearray(64 << 10))
    del KEPT[:-50]
    return total


def hot_b() -> int:
    total = 0
    for i in range(100_000):
        total += i
    return total


SDK_OPTIONS = inspect.signature(pyroscope.configure).parameters
REPORT = ("report_pid", "report_thread_id", "report_thread_name")


def main() -> None:
    server, app, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    memory = {"mem_enabled": True} if "mem_enabled" in SDK_OPTIONS else {}
    # the thread's pid, id and name as per-sample labels, where the SDK has them
    threads = {option: True for option in REPORT if option in SDK_OPTIONS}
    profiled = time.monotonic()
    pyroscope.configure(
        app_name=app, server_address=server, tags={"team": "sre"}, **memory, **threads
    )
    cpu0, start = time.process_time(), time.monotonic()
    while time.monotonic() - start < seconds:
        with pyroscope.tag_wrapper({"phase": "a"}):
            hot_a()
        hot_b()
    cpu = time.process_time() - cpu0
    pyroscope.shutdown()
    print(cpu, time.monotonic() - profiled, os.getpid())  # the time the SDK may have sampled


if __name__ == "__main__":
    main()
