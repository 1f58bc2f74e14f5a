"""The agent's loop: perf rotates a file per window; each becomes a spooled, then sent, window.

One thread does everything in turn (no locks, bounded work per turn): learn new
pids, convert rotated files into windows, spool them, send the spool oldest first
while the collector answers, and report the agent's own cost once per window.
SIGTERM and SIGINT stop perf, which writes the window in progress; that window is
spooled like the others, one last send is tried, and what is left stays spooled
for the next start.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..collect.perf_access import check_access, current_access
from ..collect.system_wide import SystemRecorder
from ..errors import UserError
from ..formats.wire import window_pprof
from .config import AgentConfig
from .host_symbols import HostSymbolizer, trim_heap
from .overhead import (
    FULL,
    LEVELS,
    PYTHON_ASKED,
    SYMBOLS_CACHED,
    THIN,
    Budget,
    Meter,
    rss_bytes,
)
from .processes import ProcessTable
from .python_sampler import PythonSampler
from .sender import Backoff, Sender, SendError
from .spool import Spool, SpoolError
from .symbol_cache import SymbolCache
from .windows import convert

# Longest the loop spends sending before it converts again; and on the way out.
SEND_BUDGET_S = 2.0
FINAL_SEND_BUDGET_S = 5.0
# perf's files waiting for conversion; past this (a stalled agent), the oldest go.
MAX_RAW_FILES = 6
TICK_S = 0.25
# The agent's own resident memory past which it drops its symbol caches (perf's
# ~13-20 MB come on top; the target for both is 100 MB).
MAX_AGENT_RSS = 84 << 20
# After dropping them, the caches are dropped again only past what was left then plus
# this: on a loaded host the memory left (the C heap, pyarrow's pools) stayed over
# MAX_AGENT_RSS, and dropping them every window re-read every DSO's tables each window
# (76% of the agent's CPU, 10-14% of the host at load 8-11).
RSS_REGROWTH = 16 << 20
# New addresses a window within the cap may always name, the most sampled first: one
# llvm-symbolizer run over a few files, ~0.02-0.05 CPU-s when there are new ones.
MIN_NAMED = 16
LAST_END = "last_end"


@dataclass
class Counters:
    windows: int = 0
    sent: int = 0
    dropped: int = 0  # unreadable here; the spool counts its own drops
    thinned: int = 0  # not converted: the agent was over its CPU cap
    python_asked_only: int = 0  # converted while py-spy ran on asked-for processes only
    symbols_cached_only: int = 0  # converted naming only the few hottest new addresses
    names_deferred: int = 0  # converted with some new addresses left unnamed (the budget)
    refused: int = 0  # by the collector: kept in the spool's refused/ folder
    samples: int = 0
    lost_samples: int = 0


@dataclass(frozen=True)
class Made:
    """One perf.data file, converted."""

    samples: int
    lost: int
    spooled: tuple[dict[str, Any], bytes] | None  # (spool meta, encoded window)


def log_stderr(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} perfsleuth agent: {message}", file=sys.stderr, flush=True)


class Agent:
    def __init__(self, config: AgentConfig, log: Callable[[str], None] = log_stderr) -> None:
        check_access(current_access())
        self.config = config
        self.log = log
        self.lock = _lock(config.spool)
        self.labels = {"host": socket.gethostname(), "service": "system", **config.labels}
        self.run_dir = config.spool / "perf" / f"{time.time_ns()}"
        self.recorder = SystemRecorder(
            self.run_dir, freq=config.freq, window_s=config.window_s, call_graph=config.call_graph
        )
        self.spool = Spool(config.spool / "windows", config.max_spool_bytes)
        self.sender = Sender(config.server, config.token)
        self.backoff = Backoff()
        self.symbolizer = HostSymbolizer(cache=SymbolCache(config.spool / "symbols"))
        self.processes = ProcessTable()
        self.python = PythonSampler(
            config.spool / "py-spy",
            window_s=config.window_s,
            max_processes=config.python_processes,
            match=config.python_match,
            log=log,
        )
        self.meter = Meter()
        cap = config.max_cpu_share
        self.budget = Budget(cap, self.meter.ncpus, config.window_s) if cap else None
        self.counts = Counters()
        # py-spy on processes no one asked for waits for the first window's names (_apply)
        self.python.asked_only = self.budget is not None
        self.level = FULL
        self._decided = (0.0, 0.0)  # (elapsed, CPU used): where the recent share starts
        self.memory_floor = MAX_AGENT_RSS
        self.stopping = False
        self.window_end = time.time()
        self._reported = (time.monotonic(), 0)

    # -- the loop -------------------------------------------------------------

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop)
        # The start-up's objects out of the cyclic GC, and fewer collections: a window's
        # objects (symbol tables, frames) are acyclic, and full collections over the
        # caches were 31% of the agent's CPU at load 8-11.
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        try:
            self._recover()
            self.processes.scan()
            self.window_end = time.time()
            self.recorder.start()
            (self.run_dir / "perf.pid").write_text(str(self.recorder.pid))
            self._started()
            self._loop()
        finally:
            self._shutdown()
            self.lock.close()
        return 0

    def _stop(self, signum: int, _frame: Any) -> None:
        self.stopping = True

    def _loop(self) -> None:
        scan_every = max(1.0, self.config.window_s / 4)
        next_scan = next_report = time.monotonic()
        while not self.stopping:
            now = time.monotonic()
            if now >= next_scan:
                self.processes.scan()
                next_scan = now + scan_every
            if self.level != THIN:  # thinning: no new py-spy runs
                self.python.tick(self.processes.known)
            self._collect(self.recorder.rotated())
            self._send(SEND_BUDGET_S)
            if now >= next_report:
                self._report()
                next_report = now + self.config.window_s
            if not self.recorder.running():
                raise UserError(f"perf record stopped: {self.recorder.last_error()}")
            time.sleep(TICK_S)

    def _shutdown(self) -> None:
        self.recorder.stop()
        self.python.stop()
        self._collect(self.recorder.rotated())
        self._send(FINAL_SEND_BUDGET_S, final=True)
        self._report()
        left = len(self.spool.pending())
        self.log(
            f"stopped: {self.counts.sent} windows sent, {left} left in the spool for the next "
            f"start, {self.counts.dropped + self.spool.dropped} dropped"
        )

    # -- windows --------------------------------------------------------------

    def _collect(self, files: list[Path]) -> None:
        for stale in files[:-MAX_RAW_FILES]:
            self._drop(stale, "the agent fell behind perf")
        for path in files[-MAX_RAW_FILES:]:
            level = self._apply(self._budget_level())
            if level == THIN:
                self._thin(path)
                continue
            self.counts.python_asked_only += level == PYTHON_ASKED
            self.counts.symbols_cached_only += level == SYMBOLS_CACHED
            self._close(path, start=self.window_end)

    def _budget_level(self) -> int:
        """What to give up for the next window, and until the one after, for the CPU cap
        (overhead.Budget.level). The recent share is measured over at least one window's
        length, from a reading kept until that much time has passed: an agent catching up
        on several raw files decides them moments apart, and the CPU of one conversion
        over those moments looked like a huge share, forcing THIN."""
        if self.budget is None:
            return FULL
        elapsed, used = self.meter.spent(self._perf_pid())
        then, used_then = self._decided
        window_s = self.config.window_s
        if elapsed - then >= window_s:
            self._decided = (elapsed, used)
        recent = self.budget.host_share(max(elapsed - then, window_s), used - used_then)
        return self.budget.level(elapsed, used, recent)

    def _perf_pid(self) -> int | None:
        return self.recorder.pid if self.recorder.running() else None

    def _apply(self, level: int) -> int:
        """Set the symbolizer and py-spy for `level`; log each change with its cost.
        py-spy on processes no one asked for also waits while naming lags (the last
        window left addresses unnamed): names come before Python frames."""
        self.symbolizer.name_limit = self._name_limit(level)
        # with a cap, nothing has caught up before the first window is converted
        started = self.budget is None or self.counts.windows > 0
        caught_up = started and self.symbolizer.deferred_last == 0
        self.python.asked_only = level >= PYTHON_ASKED or not caught_up
        self.python.service_allowed = (
            level <= PYTHON_ASKED and caught_up and self._spare_s() >= self.python.run_cost_s()
        )
        if level != self.level and self.budget is not None:
            elapsed, used = self.meter.spent(None)
            self.log(
                f"CPU budget: {self.budget.host_share(elapsed, used):.2%} of the host "
                f"since start against a cap of {self.budget.share:.2%}: "
                f"{LEVELS[self.level]} -> {LEVELS[level]} ({_giving_up(level)}); so far "
                f"py-spy {self.python.cpu_s:.1f} CPU-s, {self.symbolizer.lookups} addresses "
                f"named, {self.symbolizer.deferred} left for later naming, "
                f"{self.counts.thinned} windows thinned"
            )
            self.level = level
        return level

    def _name_limit(self, level: int) -> int | None:
        """How many new addresses the next window may name: what the budget spares for
        naming (Budget.naming_allowance_s) at what an address has cost so far, and at
        least the MIN_NAMED most sampled while the agent is within its cap (its window's
        allowance included; none over it): on a loaded host, perf and the windows'
        conversion alone take most of a 1% cap, and with nothing spared a busy program's
        hottest function stayed unnamed for minutes (bench/fleet_agreement.py at load 15:
        hotspots' `mix`, 86% of its time, 0% in the fleet; 6.5% when the floor waited
        for the share since the agent's process started to be within the cap)."""
        if self.budget is None:
            return None
        elapsed, used = self.meter.spent(self._perf_pid())
        if level == THIN or self.budget.used_of_allowed(elapsed, used) > 1:
            return 0
        if level == SYMBOLS_CACHED:
            return MIN_NAMED
        spare = self.budget.naming_allowance_s(elapsed, used)
        return max(MIN_NAMED, int(spare / self.symbolizer.cost_per_address()))

    def _spare_s(self) -> float:
        """CPU seconds the budget spares now for naming, then py-spy on a service."""
        if self.budget is None:
            return float("inf")
        elapsed, used = self.meter.spent(self._perf_pid())
        return self.budget.naming_allowance_s(elapsed, used)

    def _thin(self, path: Path) -> None:
        """Leave a window out to keep the CPU cap: its samples are not converted."""
        assert self.budget is not None
        self.window_end = max(self.window_end, path.stat().st_mtime)
        path.unlink()
        _note_end(path.parent, self.window_end)
        self.processes.end_window()
        self.counts.thinned += 1
        elapsed, used = self.meter.spent(None)
        self.log(
            f"over its CPU cap ({self.budget.host_share(elapsed, used):.2%} of the "
            f"host since start > {self.budget.share:.2%}): window {path.name} left out; "
            f"{self.counts.thinned} thinned so far"
        )

    def _close(self, path: Path, start: float) -> None:
        end = path.stat().st_mtime
        try:
            made = self._convert(path, min(start, end), end)
        except UserError as e:
            self._drop(path, str(e))
            return
        self.window_end = max(self.window_end, end)
        self.counts.samples += made.samples
        self.counts.names_deferred += self.symbolizer.deferred_last > 0
        self.counts.lost_samples += made.lost
        if made.spooled is not None:
            self._spool(*made.spooled)
        path.unlink()
        _note_end(path.parent, self.window_end)
        self.processes.end_window()
        self._fit_memory()

    def _fit_memory(self) -> None:
        trim_heap()
        if (rss := rss_bytes("self")) > self.memory_floor:
            self.symbolizer.forget()
            left = rss_bytes("self")
            self.memory_floor = max(MAX_AGENT_RSS, left + RSS_REGROWTH)
            self.log(
                f"RSS {rss >> 20} MB over {MAX_AGENT_RSS >> 20} MB: symbol caches dropped "
                f"(now {left >> 20} MB; dropped again past {self.memory_floor >> 20} MB)"
            )

    def _convert(self, path: Path, start: float, end: float) -> Made:
        """The window of one file, encoded.

        In the agent's own process, not a forked child: the symbol answers and
        the per-DSO tables the symbolizer builds (function aliases, ELF layouts)
        then last across windows, and the native reader maps DSOs instead of
        copying them, so a window costs the agent little memory.
        """
        converted = convert(
            path,
            start=start,
            end=end,
            labels=self.labels,
            rate_hz=self.config.freq,
            symbolizer=self.symbolizer,
            processes=self.processes,
        )
        spooled = None
        if (w := converted.window) is not None:
            w = self.python.merge(w)
            meta = {"id": w.id, "end": w.end, "query": window_pprof.query(w)}
            spooled = (meta, window_pprof.encode(w))
        return Made(converted.samples, converted.lost, spooled)

    def _spool(self, meta: dict[str, Any], body: bytes) -> None:
        self.counts.windows += 1
        try:
            dropped = self.spool.put(meta, body)
        except SpoolError as e:
            self.log(
                f"cannot spool window {meta['id']} ({e}): dropped; {self.spool.dropped} "
                "dropped so far (free space on the spool's disk)"
            )
            return
        if dropped:
            self.log(
                f"spool full ({self.config.max_spool_bytes >> 20} MB): dropped the oldest "
                f"window(s) {', '.join(dropped)}; {self.spool.dropped} dropped so far "
                "(raise --max-spool-mb or check the collector)"
            )

    def _drop(self, path: Path, why: str) -> None:
        path.unlink(missing_ok=True)
        self.counts.dropped += 1
        self.log(f"dropped window {path.name} ({why}); {self.counts.dropped} dropped so far")

    # -- sending --------------------------------------------------------------

    def _send(self, budget_s: float, final: bool = False) -> None:
        deadline = time.monotonic() + budget_s
        for path in self.spool.pending():
            if time.monotonic() > deadline or not (final or self.backoff.ready(time.monotonic())):
                return
            item = self.spool.load(path)
            if item is None:
                continue
            try:
                self.sender.push(item.meta, item.body)
            except SendError as e:
                if e.retry:
                    delay = self.backoff.failed(time.monotonic())
                    self.log(f"window {item.meta['id']} not sent ({e}); retrying in {delay:.0f}s")
                    return
                kept = self.spool.keep_refused(path)
                self.counts.refused += 1
                self.log(
                    f"window {item.meta['id']} refused by the collector ({e}); kept in {kept}, "
                    f"not sent again; {self.counts.refused} refused so far"
                )
                continue
            self.backoff.succeeded()
            self.spool.remove(path)
            self.counts.sent += 1

    # -- metrics --------------------------------------------------------------

    def _report(self) -> None:
        metrics = self.metrics()
        mb = 1 << 20
        self.log(
            f"{metrics['samples_per_s']:.1f} samples/s, {self.counts.windows} windows "
            f"({self.counts.sent} sent, {metrics['windows_dropped']} dropped, "
            f"{metrics['spool_windows']} spooled in {metrics['spool_bytes'] / mb:.1f} MB); "
            f"own cost {metrics['cpu_share']:.2%} of the host's CPU "
            f"({metrics['cpu_share_since_start']:.2%} since start), RSS agent "
            f"{metrics['agent_rss_bytes'] / mb:.0f} MB + perf {metrics['perf_rss_bytes'] / mb:.0f} "
            f"MB; perf lost {self.counts.lost_samples} samples"
            + (
                f"; budget {LEVELS[self.level]}: {self.counts.python_asked_only} windows with "
                f"py-spy on asked-for processes only, {self.counts.symbols_cached_only} "
                f"naming only the hottest new addresses, {self.counts.names_deferred} with "
                f"new addresses left for later naming ({self.symbolizer.deferred} addresses; "
                f"naming cost {self.symbolizer.naming_cpu_s:.1f} CPU-s), "
                f"{self.counts.thinned} windows thinned for the CPU cap"
                if self.budget
                else ""
            )
        )
        with contextlib.suppress(SendError):  # collector away: the window pushes say so
            self.sender.post_status(metrics)

    def metrics(self) -> dict[str, Any]:
        usage = self.meter.read(self._perf_pid())
        now = time.monotonic()
        then, samples_then = self._reported
        self._reported = (now, self.counts.samples)
        pending = self.spool.pending()
        return {
            "host": self.labels["host"],
            "labels": ",".join(f"{k}={v}" for k, v in sorted(self.labels.items())),
            "time": time.time(),
            "freq_hz": self.config.freq,
            "window_s": self.config.window_s,
            "call_graph": self.config.call_graph,
            "cpu_share": usage.cpu_share,
            "cpu_share_since_start": usage.cpu_share_since_start,
            "agent_cpu_s": usage.agent_cpu_s,
            "perf_cpu_s": usage.perf_cpu_s,
            "agent_rss_bytes": usage.agent_rss_bytes,
            "perf_rss_bytes": usage.perf_rss_bytes,
            "samples": self.counts.samples,
            "samples_per_s": (self.counts.samples - samples_then) / max(now - then, 1e-6),
            "lost_samples": self.counts.lost_samples,
            "windows": self.counts.windows,
            "windows_sent": self.counts.sent,
            "windows_dropped": self.counts.dropped + self.spool.dropped,
            "windows_refused": self.counts.refused,
            "windows_thinned": self.counts.thinned,
            "windows_python_asked_only": self.counts.python_asked_only,
            "windows_symbols_cached_only": self.counts.symbols_cached_only,
            "windows_names_deferred": self.counts.names_deferred,
            "budget_level": LEVELS[self.level],
            "cpu_cap": self.config.max_cpu_share,
            "spool_windows": len(pending),
            "spool_bytes": self.spool.size,
            "symbolized_addresses": self.symbolizer.lookups,
            "symbols_deferred": self.symbolizer.deferred,
            "symbols_naming_cpu_s": self.symbolizer.naming_cpu_s,
            "symbols_from_disk": self.symbolizer.cache.loaded if self.symbolizer.cache else 0,
            **self.python.metrics(),
        }

    # -- start ----------------------------------------------------------------

    def _recover(self) -> None:
        """Windows a previous agent left behind (killed, or its perf still finishing)."""
        for old in sorted((self.config.spool / "perf").glob("*")):
            if old == self.run_dir or not old.is_dir():
                continue
            _wait_for_perf(old)
            unfinished = old / "perf.data"
            if unfinished.exists():  # perf died without closing it: try it, drop if cut
                stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(unfinished.stat().st_mtime))
                unfinished.rename(old / f"perf.data.{stamp}00")
            self.window_end = _last_end(old)
            for path in sorted(old.glob("perf.data.*")):
                self._apply(self._budget_level())  # a catch-up names within the budget too
                self._close(path, start=self.window_end)
            for rest in old.iterdir():
                rest.unlink()
            old.rmdir()

    def _started(self) -> None:
        c = self.config
        self.log(
            f"sampling every CPU at {c.freq} Hz with {c.call_graph} stacks, one window every "
            f"{c.window_s}s to {c.server} as {self.labels}; {self.python.describe()}; "
            f"spool {c.spool} "
            f"(at most {c.max_spool_bytes >> 20} MB, {len(self.spool.pending())} waiting)"
        )


def _giving_up(level: int) -> str:
    return {
        FULL: "every window converted and named in full",
        PYTHON_ASKED: "py-spy only on processes --python-match names",
        SYMBOLS_CACHED: "and new addresses but the hottest sent as build-id + address, for "
        "symbols upload or debuginfod to name",
        THIN: "and windows left out unconverted",
    }[level]


def _lock(spool: Path) -> Any:
    """Hold the spool for this agent; refuse a spool another agent holds or none can write."""
    try:
        spool.mkdir(parents=True, exist_ok=True)
        lock = open(spool / "agent.lock", "w")  # noqa: SIM115 - held while running
    except OSError as e:
        raise UserError(f"cannot use the spool {spool} ({e.strerror}): give a --spool DIR") from e
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise UserError(
            f"another agent uses the spool {spool}: stop it, or give this one its own --spool DIR"
        ) from None
    return lock


def _note_end(run_dir: Path, end: float) -> None:
    """Where the next window starts, should this agent be killed before it closes it.

    A disk too full for this note costs nothing but an older start after such a kill."""
    with contextlib.suppress(OSError):
        (run_dir / LAST_END).write_text(repr(end))


def _last_end(run_dir: Path) -> float:
    """The end of the last window a previous agent closed, else when its perf started."""
    try:
        return float((run_dir / LAST_END).read_text())
    except (OSError, ValueError):
        pass
    try:
        return (run_dir / "perf.pid").stat().st_mtime
    except OSError:
        return time.time()


def _wait_for_perf(run_dir: Path, timeout: float = 15.0) -> None:
    """The perf of a killed agent gets SIGINT and writes its last file: let it finish."""
    try:
        pid = int((run_dir / "perf.pid").read_text())
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _is_perf(pid):
        time.sleep(0.2)


def _is_perf(pid: int) -> bool:
    try:
        return (
            os.readlink(f"/proc/{pid}/exe").endswith("perf")
            or "perf" in Path(f"/proc/{pid}/comm").read_text()
        )
    except OSError:
        return False
