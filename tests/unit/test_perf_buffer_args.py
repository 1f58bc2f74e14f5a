"""perf's ring buffer size per CPU (collect/perf.py, buffer_args)."""

from __future__ import annotations

import pytest

from perfsleuth.collect import perf
from perfsleuth.collect.perf_access import CAP_IPC_LOCK, Access

ROOT = Access(euid=0, cap_eff=0, paranoid=2)
LOCKER = Access(euid=1000, cap_eff=1 << CAP_IPC_LOCK, paranoid=2)
USER = Access(euid=1000, cap_eff=0, paranoid=2)


def size(args: list[str]) -> int:
    assert args[0] == "-m"
    pages = int(args[1])
    assert pages & (pages - 1) == 0, pages  # perf takes a power of 2
    return pages * perf.PAGE


@pytest.mark.parametrize("access", [ROOT, LOCKER])
def test_a_process_that_may_lock_memory_gets_buffers_for_its_samples(
    access: Access, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perf.os, "cpu_count", lambda: 2)
    for mode in ("dwarf", "fp"):
        assert 512 << 10 < size(perf.buffer_args(mode, access)) <= perf.BUFFER_BYTES[mode]


def test_without_the_capability_perf_keeps_its_default() -> None:
    """Beyond kernel.perf_event_mlock_kb, perf's mmap fails without CAP_IPC_LOCK."""
    assert perf.buffer_args("dwarf", USER) == []


def test_many_cpus_share_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perf.os, "cpu_count", lambda: 256)
    per_cpu = size(perf.buffer_args("dwarf", ROOT))
    assert per_cpu * 256 <= perf.BUFFER_BUDGET
    assert per_cpu < perf.BUFFER_BYTES["dwarf"]
