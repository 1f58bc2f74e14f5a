"""The maintenance lease on a folder: one holder, freed at once when its owner is killed,
after TTL_S when its owner is elsewhere, and a holder that lost it stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.store.fleet import lease
from perfsleuth.store.fleet.filesystem import open_root
from perfsleuth.store.fleet.lease import LEASE_FILE, TTL_S, Lease, LeaseLost

HOLD = """
import sys, time
from perfsleuth.store.fleet.filesystem import open_root
from perfsleuth.store.fleet.lease import Lease
with Lease(open_root(sys.argv[1]), "compaction", sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_second_holder_is_refused_with_the_owner_named(tmp_path: Path) -> None:
    files = open_root(str(tmp_path))
    busy = rf"compaction on .* \(pid {os.getpid()}\) holds"
    with Lease(files, "compaction", "the store"), pytest.raises(UserError, match=busy):
        Lease(files, "retention run", "the store").__enter__()
    with Lease(files, "retention run", "the store"):  # released: free again
        pass
    assert json.loads((tmp_path / LEASE_FILE).read_text())["released"] is True


def test_a_holder_killed_with_sigkill_frees_the_lease_at_once(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(UserError, match="holds the maintenance lease"):
            Lease(open_root(str(tmp_path)), "compaction", "s").__enter__()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    doc = json.loads((tmp_path / LEASE_FILE).read_text())
    assert doc["pid"] == holder.pid and doc["released"] is False  # the kill left it
    with Lease(open_root(str(tmp_path)), "compaction", "s") as taken:
        assert json.loads((tmp_path / LEASE_FILE).read_text())["token"] == taken.token


def _foreign(tmp_path: Path, age_s: float) -> None:
    doc = {"task": "compaction", "host": "another-host", "pid": 1, "ttl_s": TTL_S}
    (tmp_path / LEASE_FILE).write_text(json.dumps({**doc, "released": False}))
    then = time.time() - age_s
    os.utime(tmp_path / LEASE_FILE, (then, then))


def test_another_hosts_lease_holds_until_it_expires(tmp_path: Path) -> None:
    _foreign(tmp_path, TTL_S / 2)
    with pytest.raises(UserError, match="compaction on another-host"):
        Lease(open_root(str(tmp_path)), "compaction", "s").__enter__()
    _foreign(tmp_path, TTL_S + 1)
    with Lease(open_root(str(tmp_path)), "compaction", "s"):
        assert json.loads((tmp_path / LEASE_FILE).read_text())["host"] != "another-host"


def test_a_holder_whose_lease_was_taken_over_stops(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(lease, "RENEW_S", 0.05)
    files = open_root(str(tmp_path))
    lost = pytest.raises(LeaseLost, match="another run took its lease over")
    with lost, Lease(files, "compaction", "s") as held:
        _foreign(tmp_path, 0)  # as a successor that judged it expired would
        deadline = time.monotonic() + 30
        while not held.lost and time.monotonic() < deadline:
            time.sleep(0.05)
        held.check()
    assert json.loads((tmp_path / LEASE_FILE).read_text())["host"] == "another-host"


def test_owner_gone_needs_the_same_host_and_a_dead_or_reused_pid() -> None:
    me = json.loads(Lease(open_root("/nonexistent-store"), "c", "s")._document())
    assert not lease.owner_gone(me)
    assert lease.owner_gone({**me, "started": me["started"] + 1})  # the pid was reused
    assert lease.owner_gone({**me, "boot": "an earlier boot"})
    assert not lease.owner_gone({**me, "host": "another-host", "pid": 2**22 + 1})
