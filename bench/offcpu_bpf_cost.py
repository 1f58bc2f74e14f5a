"""CPU time the off-CPU eBPF program costs, measured by the kernel (needs root).

Wall-clock slowdowns of a few percent drown in the noise of a shared machine; the
kernel counts exactly how long BPF programs run (kernel.bpf_stats_enabled=1,
run_time_ns/run_cnt in the program's fdinfo). This runs the target under
perfsleuth's off-CPU session and reports that time against the target's own CPU
time and wall time, and per context switch of the target (the program also runs
for the other tasks' switches; those runs are included). The sysctl is
restored afterwards. To measure another version of the script, run this with
PYTHONPATH pointing at that version's src/.

usage: .venv/bin/python bench/offcpu_bpf_cost.py PROGRAM ARGS...
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from perfsleuth.collect import offcpu
from perfsleuth.collect.target import Target

STATS = Path("/proc/sys/kernel/bpf_stats_enabled")


def bpf_run_time(pid: int) -> tuple[int, int]:
    """(ns, runs) summed over the BPF programs process pid holds."""
    ns = runs = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        if "run_time_ns" in fields:
            ns += int(fields["run_time_ns"])
            runs += int(fields["run_cnt"])
    return ns, runs


def main(cmd: list[str]) -> None:
    previous = STATS.read_text().strip()
    STATS.write_text("1")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            target = Target.launch(cmd)
            session = offcpu.BpftraceSession(offcpu.check_available(), target, Path(tmp))
            session.wait_attached()
            ns0, runs0 = bpf_run_time(session.proc.pid)
            started = time.monotonic()
            target.release()
            target.wait(None, interval=0.005)
            elapsed = time.monotonic() - started
            ns1, runs1 = bpf_run_time(session.proc.pid)
            session.finish()
    finally:
        STATS.write_text(previous)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    switches = usage.ru_nvcsw + usage.ru_nivcsw
    ns, runs = ns1 - ns0, runs1 - runs0
    print(
        f"offcpu eBPF: {ns / 1e6:.1f} ms in {runs} runs ({ns / max(runs, 1):.0f} ns each, "
        f"every context switch on the machine; {ns / max(switches, 1):.0f} ns per switch-out "
        f"of the target's {switches}); target: {elapsed:.2f} s wall, {cpu:.2f} s CPU; "
        f"eBPF time = {100 * ns / 1e9 / cpu:.2f}% of the target's CPU time, "
        f"{100 * ns / 1e9 / (elapsed * os.cpu_count()):.2f}% of the machine over the run"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
