"""Recorders: one module per tool, each `record_<mode>(options, cmd, workdir) -> Recording`.

A recorder starts a real tool (perf, bpftrace, eu-stack, valgrind, py-spy) on CMD, or on
options.pid, and returns what it measured as a value (model.run.Recording); the
command adds the run facts and stores both. RECORDERS maps each `--mode` to its
recorder, imported only when used (some pull in capstone or libclang).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path

from ..model.run import Recording
from .options import RecordOptions

Recorder = Callable[[RecordOptions, list[str], Path], Recording]

RECORDERS = {
    "cpu": "perf:record_cpu",
    "offcpu": "offcpu:record_offcpu",
    "wall": "wall:record_wall",
    "all": "offcpu:record_all",
    "count": "valgrind:record_count",
    "cache": "cpu_cache:record_cache",
    "python": "python_perf:record_python",
    "python-native": "python:record_python_native",
}


def recorder(mode: str) -> Recorder:
    module, function = RECORDERS[mode].split(":")
    recorder_function: Recorder = getattr(import_module(f"{__name__}.{module}"), function)
    return recorder_function
