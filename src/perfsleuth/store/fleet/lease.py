"""The maintenance lease: one compaction or retention run at a time per store.

The lease is a small JSON file (`_maintenance.lease`) naming its owner: host, boot, pid
and the pid's start time. It is taken by creating the file only if absent (S3:
`If-None-Match: *`), or by replacing a free one only if unchanged since read (S3:
`If-Match: <ETag>`); two runs racing for it cannot both win. A lease is free when its
owner released it, when its owner is gone — on the owner's own host, a pid no longer
running or running another program since (so `kill -9` frees it at once) — or when it
was not renewed for TTL_S, by the store's own clock (another host's crashed run). The
holder renews it every RENEW_S from a thread; a run that could not renew it in time
(paused, cut off from the store) stops at its next check() instead of working on
beside a successor. Correctness never rests on the lease alone: compacted files are
created only if their name is free (compaction.py); the lease keeps runs from doing
the same work twice and retention from deleting what a compaction is writing.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from types import TracebackType

from ...errors import UserError
from .filesystem import Files

LEASE_FILE = "_maintenance.lease"
TTL_S = 60.0
RENEW_S = TTL_S / 4


class LeaseLost(UserError):
    """The lease was taken over or could not be renewed: the run stopped."""


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _started(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot); None when it does not run."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner_gone(owner: dict) -> bool:
    """Whether the process `owner` names is known to be gone: it ran on this host and
    this boot, and its pid is free or belongs to a process started since."""
    if owner.get("host") != socket.gethostname():
        return False
    if owner.get("boot") != _boot_id():
        return True
    return _started(int(owner.get("pid", 0))) != owner.get("started")


class Lease:
    """`with Lease(files, "compaction"):` holds the store's maintenance lease."""

    def __init__(self, files: Files, task: str, where: str) -> None:
        self.files = files
        self.task = task
        self.where = where  # the store, as the user named it
        self.token = uuid.uuid4().hex
        self.tag: str | None = None
        self.renewed = 0.0  # time.monotonic() of the last write that held
        self.lost = ""  # why the lease is no longer ours
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True)

    def __enter__(self) -> Lease:
        self._acquire()
        self._renewer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._renewer.join()
        if self.tag is not None and not self.lost:
            self.files.replace(LEASE_FILE, self._document(released=True), self.tag)

    def check(self) -> None:
        """Raise LeaseLost when the lease is no longer certainly ours."""
        if not self.lost and time.monotonic() - self.renewed > TTL_S * 0.75:
            self.lost = f"it was not renewed for {TTL_S * 0.75:.0f} s"
        if self.lost:
            raise LeaseLost(
                f"the {self.task} of {self.where} stopped: {self.lost}; nothing is lost,"
                " run it again"
            )

    def _document(self, released: bool = False) -> bytes:
        return json.dumps(
            {
                "task": self.task,
                "token": self.token,
                "host": socket.gethostname(),
                "boot": _boot_id(),
                "pid": os.getpid(),
                "started": _started(os.getpid()),
                "ttl_s": TTL_S,
                "released": released,
            }
        ).encode()

    def _acquire(self) -> None:
        began = time.monotonic()
        self.tag = self.files.create(LEASE_FILE, self._document())
        if self.tag is None:
            current = self.files.read_versioned(LEASE_FILE)
            if current is not None:
                holder = _parse(current.data)
                if not self._free(holder, current.age_s):
                    raise UserError(self._busy(holder, current.age_s))
                self.tag = self.files.replace(LEASE_FILE, self._document(), current.tag)
            else:  # released and deleted meanwhile
                self.tag = self.files.create(LEASE_FILE, self._document())
        if self.tag is None:
            raise UserError(
                f"another {self.task} of {self.where} took the maintenance lease just now;"
                " try again later"
            )
        self.renewed = began

    @staticmethod
    def _free(holder: dict, age_s: float) -> bool:
        if holder.get("released") or age_s >= float(holder.get("ttl_s", TTL_S)):
            return True
        return owner_gone(holder)

    def _busy(self, holder: dict, age_s: float) -> str:
        who = f"{holder.get('task', 'maintenance')} on {holder.get('host', '?')}"
        who += f" (pid {holder.get('pid', '?')})"
        left = max(0.0, float(holder.get("ttl_s", TTL_S)) - age_s)
        return (
            f"{who} holds the maintenance lease of {self.where}: try again when it is done"
            f" (the lease ends {left:.0f} s from now unless renewed)"
        )

    def _renew_loop(self) -> None:
        while not self._stop.wait(RENEW_S):
            began = time.monotonic()
            try:
                assert self.tag is not None
                tag = self.files.replace(LEASE_FILE, self._document(), self.tag)
            except OSError:
                continue  # the store is away for now: check() stops the run if it stays so
            if tag is None:
                self.lost = "another run took its lease over"
                return
            self.tag, self.renewed = tag, began


def _parse(data: bytes) -> dict:
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}
