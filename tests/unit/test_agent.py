"""The agent's parts that need no perf: access check, spool, backoff, labels, /proc reading."""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from tmpfs import fill, small_disk

from perfsleuth.agent import daemon
from perfsleuth.agent import spool as spool_module
from perfsleuth.agent.host_symbols import HostSymbolizer
from perfsleuth.agent.overhead import FULL, PYTHON_ASKED, SYMBOLS_CACHED, THIN, Budget
from perfsleuth.agent.processes import ProcessTable, _cgroup, read_process
from perfsleuth.agent.sender import Backoff
from perfsleuth.agent.spool import Spool, SpoolError
from perfsleuth.agent.symbol_cache import SymbolCache
from perfsleuth.agent.windows import window_id
from perfsleuth.binaries import build_id_of
from perfsleuth.collect.perf_access import CAP_PERFMON, Access, check_access, current_access
from perfsleuth.commands import agent as agent_command
from perfsleuth.commands.agent import parse_labels
from perfsleuth.errors import UserError
from perfsleuth.model.profile import Frame
from perfsleuth.symbols import UNKNOWN, Symbolizer
from perfsleuth.symbols.symbolizer import ElfSymbols


def test_an_unprivileged_user_is_told_what_is_missing_in_one_line(tmp_path: Path) -> None:
    sysctl = tmp_path / "perf_event_paranoid"
    sysctl.write_text("2\n")
    access = current_access(sysctl)
    with pytest.raises(UserError) as caught:
        check_access(Access(euid=1000, cap_eff=0, paranoid=access.paranoid))
    message = str(caught.value)
    assert "\n" not in message
    assert "CAP_PERFMON" in message and "perf_event_paranoid=2" in message
    assert "sysctl kernel.perf_event_paranoid=0" in message


@pytest.mark.parametrize(
    "access",
    [
        Access(euid=0, cap_eff=0, paranoid=2),
        Access(euid=1000, cap_eff=1 << CAP_PERFMON, paranoid=2),
        Access(euid=1000, cap_eff=0, paranoid=0),
    ],
)
def test_root_the_capability_or_a_low_paranoia_level_is_enough(access: Access) -> None:
    check_access(access)


def test_a_kernel_without_perf_events_is_named(tmp_path: Path) -> None:
    access = current_access(tmp_path / "missing")
    with pytest.raises(UserError, match="no perf events"):
        check_access(access)


def spooled(n: int, size: int = 1000) -> tuple[dict, bytes]:
    return {"id": f"h-{n}", "end": 1_800_000_000.0 + n, "query": {}}, b"x" * size


def test_the_spool_drops_the_oldest_windows_past_its_bound_and_counts_them(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=3500)
    dropped = [spool.put(*spooled(n)) for n in range(5)]
    assert dropped == [[], [], [], ["h-0"], ["h-1"]]
    assert spool.dropped == 2
    assert spool.size <= 3500
    assert [spool.load(p).meta["id"] for p in spool.pending()] == ["h-2", "h-3", "h-4"]


def test_a_refused_window_is_kept_out_of_the_queue_and_the_oldest_past_the_bound_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool_module, "MAX_REFUSED", 2)
    spool = Spool(tmp_path, max_bytes=1 << 20)
    for n in range(3):
        spool.put(*spooled(n))
    kept = [spool.keep_refused(path) for path in spool.pending()]
    assert spool.pending() == [] and kept[-1].parent == tmp_path / "refused"
    assert sorted(p.name for p in (tmp_path / "refused").iterdir()) == [k.name for k in kept[1:]]
    assert spool.load(kept[-1]).meta["id"] == "h-2" and spool.dropped == 1
    assert Spool(tmp_path, max_bytes=1 << 20).pending() == []  # not sent again on restart


def test_a_window_larger_than_the_whole_spool_is_dropped_and_counted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=500)
    assert spool.put(*spooled(1, size=600)) == ["h-1"]
    assert spool.dropped == 1 and spool.pending() == []


def test_spooling_the_same_window_again_keeps_one_copy(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=10_000)
    spool.put(*spooled(1))
    spool.put(*spooled(1))
    assert len(spool.pending()) == 1


def test_a_half_written_window_left_by_a_crash_is_cleared(tmp_path: Path) -> None:
    (tmp_path / "0001-h-1.win.tmp").write_bytes(b"cut")
    assert Spool(tmp_path, max_bytes=1000).pending() == []
    assert not list(tmp_path.glob("*.tmp"))


def test_backoff_grows_with_jitter_up_to_its_cap_and_resets() -> None:
    random.seed(1)
    backoff = Backoff(base=1.0, cap=8.0)
    delays = [backoff.failed(0.0) for _ in range(6)]
    for n, delay in enumerate(delays):
        full = min(8.0, 2.0**n)
        assert full / 2 <= delay <= full
    assert not backoff.ready(0.0)
    backoff.succeeded()
    assert backoff.ready(0.0)


def test_labels_are_parsed_and_bad_ones_refused() -> None:
    assert parse_labels("service=api, version=1.4,environment=prod") == {
        "service": "api",
        "version": "1.4",
        "environment": "prod",
    }
    for bad in ("service", "service=a{b}", "pid=3", "1x=2", "k="):
        with pytest.raises(UserError):
            parse_labels(bad)


def test_the_window_id_is_the_host_and_perfs_file_stamp() -> None:
    path = Path("/spool/perf.data.2026112504430495")
    assert window_id("web-1.example", path) == "web-1.example-2026112504430495"
    assert window_id("bad host/name", path) == "bad_host_name-2026112504430495"


def test_cgroup_prefers_the_unified_hierarchy() -> None:
    v2 = "0::/system.slice/nginx.service\n"
    mixed = "12:cpu,cpuacct:/docker/abc\n0::/docker/abc\n"
    assert _cgroup(v2) == "/system.slice/nginx.service"
    assert _cgroup(mixed) == "/docker/abc"
    assert _cgroup("4:memory:/kubepods/pod1\n") == "/kubepods/pod1"


def test_a_process_lists_the_shared_libraries_it_has_mapped(tmp_path: Path) -> None:
    base = tmp_path / "42"
    base.mkdir()
    (base / "exe").symlink_to("/bin/true")
    maps = [
        "5600-5700 r-xp 00001000 08:01 1 /usr/bin/app",
        "7f00-7f10 r--p 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
        "7f10-7f20 r-xp 00001000 08:01 2 /usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
        "7f30-7f40 r-xp 00001000 08:01 3 /usr/lib/x86_64-linux-gnu/libc.so.6",
        "7ff0-7ff8 rw-p 00000000 00:00 0 [stack]",
        "7ff9-7ffa rw-p 00000000 00:00 0",
    ]
    (base / "maps").write_text("\n".join(maps) + "\n")
    process = read_process(42, tmp_path)
    assert process is not None
    assert process.libraries == (
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
    )


def test_the_process_table_remembers_exited_pids_for_a_few_windows(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    os.symlink("/bin/true", proc / "42" / "exe")
    (proc / "42" / "cgroup").write_text("0::/app.slice\n")
    table = ProcessTable(proc)
    table.scan()
    assert table.describe([42])[42].cgroup == "/app.slice"
    assert table.describe([42])[42].exe == "/bin/true"
    for child in (proc / "42").iterdir():
        child.unlink()
    (proc / "42").rmdir()
    table.scan()
    table.end_window()
    assert 42 in table.describe([42])  # exited, but its last samples still need it
    for _ in range(3):
        table.end_window()
    assert table.describe([42]) == {}


def test_the_host_symbolizer_asks_once_per_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[list] = []

    def tools(self: Symbolizer, items: list) -> dict:
        asked.append(sorted(items))
        return {(p, o): (Frame(f"f{o}", dso=p),) for p, _, o in items}

    monkeypatch.setattr(Symbolizer, "symbolize_offsets", tools)
    sym = HostSymbolizer()
    sym.symbolize_offsets([("/bin/a", "b1", 1), ("/bin/a", "b1", 2)])
    sym.symbolize_offsets([("/bin/a", "b1", 2), ("/bin/a", "b1", 3)])
    answer = sym.symbolize_offsets([("/bin/a", "b1", 1), ("/bin/a", "b1", 3)])
    assert answer[("/bin/a", 3)][0].function == "f3"
    assert asked[1] == [("/bin/a", "b1", 3)]  # only the address not seen before
    assert len(asked) == 2  # the last call found everything cached
    assert sym.lookups == 3


def test_the_host_symbolizer_keys_answers_by_the_files_own_build_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # perf records without its build-id pass: the triples come with no build-id
    asked: list[tuple] = []

    def tools(self: Symbolizer, items: list) -> dict:
        asked.extend(items)
        return {(p, o): (Frame(f"f{o}", dso=p),) for p, _, o in items}

    monkeypatch.setattr(Symbolizer, "symbolize_offsets", tools)
    exe = os.path.realpath("/bin/true")
    HostSymbolizer().symbolize_offsets([(exe, "", 16), ("[vdso]", "", 8)])
    assert build_id_of(exe)
    assert sorted(asked) == [(exe, build_id_of(exe), 16), ("[vdso]", "", 8)]


def test_the_agent_loads_neither_duckdb_nor_capstone() -> None:
    # 27 and 13 MB of the agent's 100 MB budget (with perf's) for nothing it uses
    code = (
        "import sys; from perfsleuth import cli; import perfsleuth.agent.daemon; "
        "cli.build_parser(['agent', '--server', 'http://127.0.0.1:1']); "
        "print(sorted({'_duckdb', 'capstone', 'pyarrow'} & sys.modules.keys()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_run_store_error_is_still_one_line_without_duckdb_imported_up_front(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import duckdb

    from perfsleuth import cli
    from perfsleuth.commands import agent

    def broken(_args: object) -> int:
        raise duckdb.IOException("database is locked")

    monkeypatch.setattr(agent, "run", broken)
    assert cli.main(["agent", "--server", "x"]) == 2
    assert capsys.readouterr().err == "perfsleuth: the run store failed: database is locked\n"


def test_a_window_the_full_disk_refuses_is_dropped_counted_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", "64k") as disk:
        spool = Spool(disk / "windows", max_bytes=1 << 20)
        spool.put(*spooled(1))
        ballast = fill(disk)
        with pytest.raises(SpoolError, match="No space left on device"):
            spool.put(*spooled(2, size=8000))
        assert spool.dropped == 1
        assert [p.name for p in (disk / "windows").iterdir()] == [spool.pending()[0].name]
        ballast.unlink()
        spool.put(*spooled(3))
        assert [spool.load(p).meta["id"] for p in spool.pending()] == ["h-1", "h-3"]


def test_a_cpu_budget_allows_its_share_and_one_window_more() -> None:
    budget = Budget(share=0.01, ncpus=2, window_s=10)
    assert budget.used_of_allowed(elapsed_s=100, used_s=2.2) <= 1  # 0.01 x 2 x (100 + 10)
    assert budget.used_of_allowed(elapsed_s=100, used_s=2.3) > 1
    assert budget.used_of_allowed(elapsed_s=0, used_s=0.3) > 1  # over one window's worth


def test_nearing_its_cap_the_agent_gives_up_python_then_new_symbols_then_windows() -> None:
    budget = Budget(share=0.01, ncpus=2, window_s=10)  # 2.2 CPU-s allowed at 100 s
    assert budget.level(elapsed_s=100, used_s=1.0, recent_share=0.05) == FULL
    assert budget.level(elapsed_s=100, used_s=1.2, recent_share=0.05) == PYTHON_ASKED
    assert budget.level(elapsed_s=100, used_s=1.7, recent_share=0.05) == SYMBOLS_CACHED
    # over the cap: windows are still converted cheaply while that costs less than the cap
    assert budget.level(elapsed_s=100, used_s=3.0, recent_share=0.008) == SYMBOLS_CACHED
    assert budget.level(elapsed_s=100, used_s=3.0, recent_share=0.02) == THIN


HOTSPOTS = Path(__file__).resolve().parents[2] / "examples" / "bin" / "hotspots"


def test_deferred_addresses_stay_unnamed_and_uncached_while_cached_ones_are_named() -> None:
    """Near the cap new addresses are not asked of llvm-symbolizer; they are asked once
    the agent is back within its budget."""
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    path = str(HOTSPOTS)
    # hotspots is a PIE whose text has file offset == ELF address; [-1]: the outermost of
    # an inline chain
    a, b = (ElfSymbols(path).by_name[f] for f in ("compute_a", "compute_b"))
    sym = HostSymbolizer()
    assert sym.symbolize_offsets([(path, "", a)])[(path, a)][-1].function == "compute_a"
    sym.name_limit = 0
    both = sym.symbolize_offsets([(path, "", a), (path, "", b)])
    assert both[(path, a)][-1].function == "compute_a"  # cached: still named
    assert both[(path, b)] == (Frame(UNKNOWN, dso="hotspots"),)
    assert (sym.lookups, sym.deferred) == (1, 1)
    sym.name_limit = None
    assert sym.symbolize_offsets([(path, "", b)])[(path, b)][-1].function == "compute_b"
    assert sym.lookups == 2


def test_a_window_names_up_to_its_limit_in_the_order_asked_and_the_rest_later() -> None:
    """The budget paces naming: the first addresses asked (perf_data asks the most
    sampled first) are named, the rest shipped unnamed and named by a later window."""
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    path, libc = str(HOTSPOTS), os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    a, b = (ElfSymbols(path).by_name[f] for f in ("compute_a", "compute_b"))
    sym = HostSymbolizer()
    sym.name_limit = 2
    first = sym.symbolize_offsets([(path, "", a), (path, "", b), (libc, "", 0x1000)])
    assert [first[(path, x)][-1].function for x in (a, b)] == ["compute_a", "compute_b"]
    assert first[(libc, 0x1000)] == (Frame(UNKNOWN, dso="libc.so.6"),)
    assert (sym.lookups, sym.deferred_last, sym.name_limit) == (2, 1, 0)
    sym.name_limit = 5
    sym.symbolize_offsets([(libc, "", 0x1000), (path, "", a)])
    assert (sym.lookups, sym.deferred_last, sym.name_limit) == (3, 0, 4)
    assert sym.named == 3  # its CPU may round to 0: os.times() counts 10 ms ticks


def test_a_naming_cost_measured_as_zero_ticks_still_paces_the_naming() -> None:
    """250 addresses named within one 10 ms tick: the window's allowance divides by it."""
    sym = HostSymbolizer()
    sym.named, sym.naming_cpu_s = 250, 0.0
    assert sym.cost_per_address() > 0


def test_named_answers_outlive_the_agent_on_disk_by_build_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    path = str(HOTSPOTS)
    assert build_id_of(path)
    a = ElfSymbols(path).by_name["compute_a"]
    named = HostSymbolizer(cache=SymbolCache(tmp_path)).symbolize_offsets([(path, "", a)])
    (tmp_path / f"{build_id_of(path)}.jsonl").open("a").write('[1, [["cut')  # a crash

    def no_tools(self: Symbolizer, items: list) -> dict:
        raise AssertionError(f"asked the tools again for {items}")

    monkeypatch.setattr(Symbolizer, "symbolize_offsets", no_tools)
    restarted = HostSymbolizer(cache=SymbolCache(tmp_path))
    assert restarted.symbolize_offsets([(path, "", a)]) == named
    assert named[(path, a)][-1].function == "compute_a"
    assert restarted.lookups == 0 and restarted.cache is not None
    assert restarted.cache.loaded == 1  # the cut line is skipped


def test_the_symbol_cache_keeps_its_bound_by_dropping_the_oldest_files(tmp_path: Path) -> None:
    chain = (Frame("f", dso="x", file="x.c", line=3),)
    cache = SymbolCache(tmp_path, max_bytes=200)
    for i, bid in enumerate(("aa" * 10, "bb" * 10, "cc" * 10)):
        cache.add(bid, [(o, chain) for o in range(i * 3, i * 3 + 3)])
        os.utime(tmp_path / f"{bid}.jsonl", (i, i))  # written in this order
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 200
    assert not (tmp_path / f"{'aa' * 10}.jsonl").exists()
    assert cache.load("cc" * 10, "x") == {6: chain, 7: chain, 8: chain}
    cache.add("../etc", [(1, chain)])  # not a build-id: not a file name either
    assert not list(tmp_path.glob("*etc*"))


def test_answers_named_before_a_debug_file_was_installed_are_not_read_after(
    tmp_path: Path,
) -> None:
    """Symbol-table-only answers (no line) are kept apart from those named with the build-id's
    debug file: once it is installed, the addresses are named anew, with their lines."""
    bid = "ab" * 10
    debug_dir = tmp_path / "debug"
    cache = SymbolCache(tmp_path / "cache", debug_dirs=(str(debug_dir),))
    cache.add(bid, [(1, (Frame("f", dso="x"),))])
    assert cache.load(bid, "x") == {1: (Frame("f", dso="x"),)}
    debug_file = debug_dir / ".build-id" / bid[:2] / f"{bid[2:]}.debug"
    debug_file.parent.mkdir(parents=True)
    debug_file.write_bytes(b"")
    assert cache.load(bid, "x") == {}
    lined = (Frame("f", dso="x", file="x.c", line=3),)
    cache.add(bid, [(1, lined)])
    assert cache.load(bid, "x") == {1: lined}
    debug_file.unlink()  # removed again: the symbol table's answers are still there
    assert cache.load(bid, "x") == {1: (Frame("f", dso="x"),)}


def test_naming_may_spend_what_the_budget_spares_up_to_three_quarters() -> None:
    """Of the cap since start, without the window's allowance: 2.0 CPU-s at 100 s."""
    budget = Budget(share=0.01, ncpus=2, window_s=10)
    assert budget.naming_allowance_s(elapsed_s=100, used_s=1.0) == pytest.approx(0.5)
    assert budget.naming_allowance_s(elapsed_s=200, used_s=1.0) == pytest.approx(2.0)
    assert budget.naming_allowance_s(elapsed_s=100, used_s=1.6) == 0


def test_names_come_before_py_spy_on_processes_no_one_asked_for(tmp_path: Path) -> None:
    config = daemon.AgentConfig(server="http://127.0.0.1:9", spool=tmp_path / "spool", window_s=10)
    agent = daemon.Agent(config, log=lambda line: None)
    agent.meter.spent = lambda perf: (100.0, 1.0)  # type: ignore[method-assign]
    try:
        assert agent.python.asked_only  # at start: the first window's names first
        agent._apply(FULL)  # deciding the first window: nothing named yet
        assert agent.python.asked_only
        agent.counts.windows = 1
        agent.symbolizer.deferred_last = 5
        agent._apply(FULL)
        assert agent.python.asked_only
        assert agent.symbolizer.name_limit == int(0.5 / agent.symbolizer.cost_per_address())
        agent.symbolizer.deferred_last = 0
        agent._apply(FULL)
        assert not agent.python.asked_only
        agent._apply(PYTHON_ASKED)  # 0.5 CPU-s spare: a py-spy run on a service fits
        assert agent.python.asked_only and agent.python.service_allowed
        agent.meter.spent = lambda perf: (100.0, 1.45)  # type: ignore[method-assign]
        agent._apply(PYTHON_ASKED)  # 0.05 CPU-s spare: it does not
        assert not agent.python.service_allowed
        agent.meter.spent = lambda perf: (100.0, 1.7)  # type: ignore[method-assign]
        agent._apply(PYTHON_ASKED)  # nothing spared: the hottest are still named
        assert agent.symbolizer.name_limit == daemon.MIN_NAMED
        agent.meter.spent = lambda perf: (100.0, 2.3)  # type: ignore[method-assign]
        agent._apply(SYMBOLS_CACHED)  # over the cap and its window's allowance (2.2): none
        assert agent.symbolizer.name_limit == 0
    finally:
        agent.lock.close()


def test_each_budget_step_sets_the_symbolizer_and_py_spy_and_is_logged(tmp_path: Path) -> None:
    logged: list[str] = []
    config = daemon.AgentConfig(server="http://127.0.0.1:9", spool=tmp_path / "spool")
    agent = daemon.Agent(config, log=logged.append)
    try:
        assert agent.budget is not None and agent.budget.share == 0.01  # the default cap
        agent.counts.windows = 1  # a window converted, all its addresses named
        agent._apply(PYTHON_ASKED)
        assert agent.python.asked_only and agent.symbolizer.name_limit != 0
        agent._apply(SYMBOLS_CACHED)  # within the cap: the few most sampled only
        assert agent.python.asked_only and agent.symbolizer.name_limit == daemon.MIN_NAMED
        agent._apply(THIN)
        assert agent.symbolizer.name_limit == 0
        agent._apply(FULL)
        assert not agent.python.asked_only and agent.symbolizer.name_limit != 0
        steps = [line.split(": ", 2)[2].split(" (")[0] for line in logged]
        assert steps == [
            "full -> python-asked-only",
            "python-asked-only -> symbols-cached-only",
            "symbols-cached-only -> thin",
            "thin -> full",
        ]
        assert agent.metrics()["budget_level"] == "full"
    finally:
        agent.lock.close()


def test_files_decided_moments_apart_share_a_windows_recent_cpu(tmp_path: Path) -> None:
    """Catching up on raw files decides them moments apart: the CPU between two of them is
    measured over a window's length, not over those moments (which forced THIN)."""
    config = daemon.AgentConfig(server="http://127.0.0.1:9", spool=tmp_path / "spool", window_s=10)
    agent = daemon.Agent(config, log=lambda line: None)
    readings = iter([(100.0, 2.5), (100.01, 2.51), (110.5, 3.0)])  # over the 1% cap of 2 CPUs
    agent.meter.spent = lambda perf: next(readings)  # type: ignore[method-assign]
    agent._decided = (90.0, 2.45)
    try:
        assert agent._budget_level() == SYMBOLS_CACHED  # 0.05 CPU-s in 10 s: 0.25%
        assert agent._budget_level() == SYMBOLS_CACHED  # 0.01 CPU-s, not in 0.01 s
        assert agent._budget_level() == THIN  # 0.5 CPU-s in 10.5 s: 2.4%
    finally:
        agent.lock.close()


def test_the_cap_defaults_to_one_percent_and_zero_means_none(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    agent_command.add_arguments(parser)
    base = ["--server", "http://127.0.0.1:4040", "--spool", str(tmp_path)]
    assert agent_command.config(parser.parse_args(base)).max_cpu_share == 0.01
    assert agent_command.config(parser.parse_args([*base, "--max-cpu", "0"])).max_cpu_share is None
    with pytest.raises(UserError, match="bad --max-cpu"):
        agent_command.config(parser.parse_args([*base, "--max-cpu", "-1"]))
