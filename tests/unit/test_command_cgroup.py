"""Where perf -G looks for the command's cgroup, and why there is none: parsed from this
machine's /proc/self/mounts and /proc/self/cgroup (a hybrid layout: cgroup v1
controllers, cgroup2 at /sys/fs/cgroup/unified)."""

from __future__ import annotations

from pathlib import Path

from perfsleuth.collect.command_cgroup import create, hierarchy, own_path
from perfsleuth.collect.perf_access import Access

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cgroup"
MOUNTS = FIXTURES / "mounts-hybrid"
OWN = FIXTURES / "self-hybrid"
ROOT = Access(euid=0, cap_eff=0, paranoid=2)


def test_without_a_perf_event_controller_perf_looks_in_cgroup2() -> None:
    assert hierarchy(MOUNTS.read_text()) == (Path("/sys/fs/cgroup/unified"), "")


def test_a_v1_perf_event_controller_comes_before_cgroup2() -> None:
    """The same mounts with the cpu controller's line naming perf_event instead."""
    text = MOUNTS.read_text().replace(
        "/cgroup/cpu cgroup rw,relatime,cpu ", "/cgroup/pe cgroup rw,relatime,perf_event "
    )
    assert hierarchy(text) == (Path("/sys/fs/cgroup/pe"), "perf_event")


def test_no_cgroup_mount_is_no_hierarchy() -> None:
    assert hierarchy("proc /proc proc rw 0 0\n") is None


def test_own_cgroup_is_read_per_hierarchy() -> None:
    cgroups = OWN.read_text()
    assert own_path(cgroups, "") == ""
    assert own_path(cgroups, "memory").startswith("process_api/")
    assert own_path(cgroups, "perf_event") is None


def test_without_per_cpu_events_it_says_what_is_needed() -> None:
    said = create(1, MOUNTS, OWN, Access(euid=1000, cap_eff=0, paranoid=2))
    assert isinstance(said, str) and "root or CAP_PERFMON" in said and "paranoid=2" in said


def test_unreadable_or_missing_cgroups_are_said(tmp_path: Path) -> None:
    said = create(1, tmp_path / "missing", OWN, ROOT)
    assert isinstance(said, str) and said.startswith("cannot read the cgroups")
    (tmp_path / "mounts").write_text("proc /proc proc rw 0 0\n")
    said = create(1, tmp_path / "mounts", OWN, ROOT)
    assert said == "no cgroup2 or perf_event cgroup hierarchy is mounted"


def test_a_folder_it_may_not_make_is_said(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"cgroup2 {tmp_path / 'absent'} cgroup2 rw 0 0\n")
    said = create(1, mounts, OWN, ROOT)
    assert isinstance(said, str) and said.startswith(
        f"cannot make a cgroup in {tmp_path / 'absent'}"
    )
