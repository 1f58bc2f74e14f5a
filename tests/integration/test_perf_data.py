"""formats.perf_data on real recordings, checked against `perf report`.

tests/fixtures/perf_prog.c is built with frame pointers and recorded twice,
with `perf record -g` and with `--call-graph dwarf`. Self and total shares per
function must agree with `perf report --stdio --no-children` / `--children`
within 1 percentage point, for both readers (native and `perf script`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.formats import perf_data
from perfsleuth.model.profile import Frame, Profile
from perfsleuth.symbols import Symbolizer, binaries
from perfsleuth.symbols.missing import is_unknown

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CC = shutil.which("gcc") or shutil.which("cc") or shutil.which("clang-16") or "cc"
REPORT_LINE = re.compile(r"^\s+([\d.]+)%\s+(?:([\d.]+)%\s+)?\[(.)\]\s+(.*?)\s*$")


def _perf_ok() -> bool:
    perf = shutil.which("perf")
    if perf is None:
        return False
    r = subprocess.run(
        [perf, "record", "-q", "-o", "/dev/null", "--", "true"], capture_output=True, check=False
    )
    return r.returncode == 0


needs_perf = pytest.mark.skipif(not _perf_ok(), reason="perf missing or not permitted")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _perf_ok():
        pytest.skip("perf missing or not permitted")
    d = tmp_path_factory.mktemp("perfdata")
    exe = d / "perf_prog"
    subprocess.run(
        [
            CC,
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-o",
            str(exe),
            str(FIXTURES / "perf_prog.c"),
        ],
        check=True,
    )
    return d


def _record(work: Path, name: str, *opts: str, rounds: str = "60") -> Path:
    data = work / name
    if not data.exists():
        subprocess.run(
            ["perf", "record", "-q", *opts, "-o", str(data), "--", str(work / "perf_prog"), rounds],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=work,
        )
    return data


@pytest.fixture(scope="module")
def fp_data(work: Path) -> Path:
    return _record(work, "fp.data", "-F", "2000", "-g")


@pytest.fixture(scope="module")
def dwarf_data(work: Path) -> Path:
    return _record(work, "dwarf.data", "-F", "1000", "--call-graph", "dwarf", rounds="40")


def perf_report(data: Path, children: bool) -> dict[str, float]:
    """{symbol: self% (no-children) or children%} from perf report."""
    out = subprocess.run(
        [
            "perf",
            "report",
            "-i",
            str(data),
            "--stdio",
            "-g",
            "none",
            "--sort",
            "sym",
            "--children" if children else "--no-children",
            "--percent-limit",
            "0",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    res: dict[str, float] = {}
    for line in out.splitlines():
        m = REPORT_LINE.match(line)
        if m:
            res[m[4]] = res.get(m[4], 0.0) + float(m[1])
    return res


def ours(p: Profile) -> tuple[dict[str, float], dict[str, float]]:
    """(self%, total%) per function, inlined frames folded as perf report does."""
    self_w: Counter[str] = Counter()
    total_w: Counter[str] = Counter()
    for stack, w, _c, _t, _s in p.rows():
        physical = [p.frames[f] for f in stack if not p.frames[f].inlined]
        if physical:
            self_w[physical[0].function] += w
        for name in {f.function for f in physical}:
            total_w[name] += w
    t = p.total
    return (
        {k: 100 * v / t for k, v in self_w.items()},
        {k: 100 * v / t for k, v in total_w.items()},
    )


def assert_matches(
    p: Profile, data: Path, funcs: tuple[str, ...], *, check_all: bool = True
) -> None:
    """Shares of `funcs` (and, with check_all, of every function perf shows >= 1%)
    agree with perf report. check_all=False where libc is hot: perf names libc
    code by its symbol table (msort_with_tmp.part.0, __memmove_avx_unaligned_erms),
    perfsleuth by its debug info (msort_with_tmp, __memcpy_avx_unaligned_erms)."""
    self_pct, total_pct = ours(p)
    rep_self = perf_report(data, children=False)
    rep_total = perf_report(data, children=True)
    for fn in funcs:
        assert self_pct.get(fn, 0.0) == pytest.approx(rep_self.get(fn, 0.0), abs=1.0), fn
        assert total_pct.get(fn, 0.0) == pytest.approx(rep_total.get(fn, 0.0), abs=1.0), fn
    if not check_all:
        return
    # every function perf report gives >= 1% self has about the same share here
    for fn, pct in rep_self.items():
        if pct >= 1.0 and not fn.startswith("0x"):
            assert self_pct.get(fn, 0.0) == pytest.approx(pct, abs=1.0), fn


FUNCS = ("heavy_leaf", "light_leaf", "main")


@pytest.mark.parametrize("native", [True, False], ids=["native", "perf-script"])
def test_frame_pointer_recording_matches_perf_report(fp_data: Path, native: bool) -> None:
    if native and not perf_data.native_available():
        pytest.skip("perfsleuth_native not built (make native)")
    p = perf_data.read(fp_data, use_native=native)
    assert p.unit == "ns"
    assert p.num_samples > 100
    assert_matches(p, fp_data, FUNCS)
    assert p.meta["reader"] == ("native" if native else "perf script")


@pytest.mark.parametrize("native", [True, False], ids=["native", "perf-script"])
def test_dwarf_recording_matches_perf_report(dwarf_data: Path, native: bool) -> None:
    if native and not perf_data.native_available():
        pytest.skip("perfsleuth_native not built (make native)")
    p = perf_data.read(dwarf_data, use_native=native)
    assert_matches(p, dwarf_data, (*FUNCS, "heavy_path", "light_path"))
    if native:
        assert p.meta["reader"] == "native"
        assert p.meta["samples_dwarf_unwound"] > 0
    # DWARF unwinding recovers the callers frame pointers miss in leaf functions
    _, total_pct = ours(p)
    assert total_pct.get("heavy_path", 0) > 20


def _threads_program(work: Path) -> Path:
    exe = work / "import_workload"
    if not exe.exists():
        src = FIXTURES.parent.parent / "bench" / "import_workload.c"
        subprocess.run(
            [CC, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe), str(src)],
            check=True,
        )
    return exe


@pytest.mark.parametrize("mode", ["fp", "dwarf"])
def test_threads_and_recursion_match_perf_report(work: Path, mode: str) -> None:
    """bench/import_workload.c: 2 threads, recursion, qsort callbacks into libc."""
    exe = _threads_program(work)
    data = work / f"threads-{mode}.data"
    opts = ["-F", "1000", "--call-graph", "dwarf"] if mode == "dwarf" else ["-F", "4000", "-g"]
    subprocess.run(
        ["perf", "record", "-q", *opts, "-o", str(data), "--", str(exe), "2", "1.5"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    p = perf_data.read(data)
    funcs = ("leaf_hash", "cmp", "leaf_sort", "walk", "worker", "branch_a", "branch_c")
    assert_matches(p, data, funcs, check_all=False)
    workers = {t for t in p.threads if t.tid != t.pid}
    assert len(workers) == 2 and all(t.name == "import_workload" for t in workers)
    per_thread: Counter[int] = Counter()
    for _stack, w, _c, t, _s in p.rows():
        per_thread[t] += w
    shares = sorted(per_thread[p.threads.index(t)] / p.total for t in workers)
    assert shares[0] > 0.3  # both worker threads got samples


def test_inlined_frames_and_lines(fp_data: Path) -> None:
    p = perf_data.read(fp_data)
    mix = [f for f in p.frames if f.function == "mix"]
    assert mix and all(f.inlined for f in mix)
    assert all(f.file.endswith("perf_prog.c") and 11 <= f.line <= 14 for f in mix)
    heavy = [f for f in p.frames if f.function == "heavy_leaf"]
    assert heavy and all(f.file.endswith("perf_prog.c") and f.line > 0 for f in heavy)
    assert all(f.dso == "perf_prog" for f in heavy)
    # the inlined frame comes right before (leaf side of) its physical function
    for stack, *_ in p.rows():
        for i, fid in enumerate(stack[:-1]):
            if p.frames[fid].function == "mix":
                assert p.frames[stack[i + 1]].function in ("heavy_leaf", "light_leaf")
    # main's frame is the call site line inside main (return address - 1)
    mains = {f.line for f in p.frames if f.function == "main"}
    assert mains <= set(range(32, 40))


def test_addresses_are_asked_the_most_sampled_first(fp_data: Path) -> None:
    """A symbolizer that names only some of a window's addresses (the agent near its
    CPU budget) names the ones that matter most: they come first."""
    if not perf_data.native_available():
        pytest.skip("perfsleuth_native not built (make native)")
    import perfsleuth_native as native

    asked: list[tuple[str, str, int]] = []

    class Watched(Symbolizer):
        def symbolize_offsets(self, items):  # type: ignore[no-untyped-def]
            asked.extend(items)
            return super().symbolize_offsets(items)

    perf_data.read(fp_data, symbolizer=Watched())
    data = native.read_perf_data(str(fp_data))
    frames, dsos, stacks = data["frames"], data["dsos"], data["stacks"]
    samples: dict[tuple[str, int], int] = {}
    for sid, count in zip(data["rows"]["stack"], data["rows"]["count"], strict=True):
        for key in {
            (dsos[frames["dso"][f]]["path"], frames["address"][f])
            for f in stacks[sid]
            if frames["dso"][f] >= 0 and not frames["kernel"][f]
        }:
            samples[key] = samples.get(key, 0) + count
    order = [samples[(path, offset)] for path, _, offset in asked]
    assert len(order) > 5 and order == sorted(order, reverse=True)
    assert order[0] > order[-1]


def test_metadata(fp_data: Path, work: Path) -> None:
    p = perf_data.read(fp_data)
    m = p.meta
    assert m["arch"] == "x86_64"
    assert m["hostname"] == os.uname().nodename
    assert m["osrelease"] == os.uname().release
    assert m["nrcpus_online"] >= 1
    assert m["perf_version"]
    assert m["cmdline"][1] == "record"
    assert m["event"].startswith("cpu-clock")
    if perf_data.native_available():
        assert (m["event_kind"], m["call_graph"]) == ("software", "fp")
    # perf drops samples only when it cannot drain its ring buffer in time (a loaded machine)
    assert 0 <= m["lost_samples"] <= m["num_samples"] // 20
    exe = str(work / "perf_prog")
    dso = next(d for d in p.dsos if d["path"] == exe)
    readelf = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True).stdout
    assert dso["build_id"] and dso["build_id"] in readelf
    assert any(b["path"] == exe for b in m["build_ids"])
    (thread,) = {(t.pid, t.tid, t.name) for t in p.threads}
    assert thread[2] == "perf_prog" and thread[0] == thread[1] > 0
    # the perf script fallback reads the same header facts
    q = perf_data.read(fp_data, use_native=False)
    for key in ("hostname", "osrelease", "arch", "cpudesc", "perf_version", "nrcpus_online"):
        assert q.meta[key] == m[key], key
    assert q.meta["cmdline"] == m["cmdline"]
    assert any(d["path"] == exe and d["build_id"] == dso["build_id"] for d in q.dsos)


def test_rebuilt_binary_is_found_by_build_id(tmp_path: Path) -> None:
    """The binary changed after recording: symbols come from perf's build-id cache."""
    src = tmp_path / "prog.c"
    src.write_text((FIXTURES / "perf_prog.c").read_text())
    exe = tmp_path / "prog"
    cc = [CC, "-O2", "-g", "-fno-omit-frame-pointer", "-o", str(exe), str(src)]
    subprocess.run(cc, check=True)
    data = tmp_path / "rb.data"
    subprocess.run(
        ["perf", "record", "-q", "-g", "-F", "1000", "-o", str(data), "--", str(exe), "20"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    src.write_text("int pad(int x) { return x * x + 3; }\n" + src.read_text())
    subprocess.run([*cc[:1], "-O0", *cc[2:]], check=True)  # other code, other addresses
    p = perf_data.read(data)
    found = next(b for b in binaries(p) if b["path"] == str(exe))
    if not found["found"].startswith(str(Path.home() / ".debug")):
        pytest.skip("perf's build-id cache is disabled here")
    self_pct, _ = ours(p)
    rep = perf_report(data, children=False)
    assert self_pct["heavy_leaf"] == pytest.approx(rep["heavy_leaf"], abs=1.0)


def _kernel_sampled() -> bool:
    """perf may sample the kernel: root, or perf_event_paranoid at most 1."""
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    return os.geteuid() == 0 or int(paranoid) <= 1


def test_kernel_frames(work: Path) -> None:
    """dd copying one byte per read and write spends most of its time in the kernel
    (perf_prog, all user code, may have no kernel sample at all on a quiet machine)."""
    data = work / "kernel.data"
    dd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000"]
    subprocess.run(
        ["perf", "record", "-q", "-F", "2000", "-g", "-o", str(data), "--", *dd],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    p = perf_data.read(data)
    kernel = [f for f in p.frames if f.kernel]
    if not _kernel_sampled():
        assert not kernel
        return
    assert kernel and all(f.dso.startswith("[") for f in kernel)
    if os.access("/proc/kallsyms", os.R_OK) and os.geteuid() == 0:
        assert any(f.function != "[unknown]" for f in kernel)


def test_stripped_binary_functions_stay_apart(work: Path) -> None:
    """Without symbols, each function gets its own "[unknown] dso+0xSTART" name
    (its .eh_frame start), instead of one "[unknown]" for the whole binary."""
    if not perf_data.native_available():
        pytest.skip("perfsleuth_native not built (make native)")
    stripped = work / "perf_prog_stripped"
    shutil.copy(work / "perf_prog", stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    data = work / "stripped.data"
    subprocess.run(
        ["perf", "record", "-q", "-g", "-o", str(data), "--", str(stripped), "30"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    p = perf_data.read(data)
    self_weight: Counter[str] = Counter()
    for stack, w, _c, _t, _s in p.rows():
        leaf = p.frames[stack[0]]
        if leaf.dso == stripped.name:
            self_weight[leaf.function] += w
    assert len(self_weight) >= 2
    assert all(is_unknown(Frame(name)) for name in self_weight)
    assert all(name.startswith(f"[unknown] {stripped.name}+0x") for name in self_weight)
    assert max(self_weight.values()) / p.total < 0.95


def test_bad_files(tmp_path: Path, fp_data: Path) -> None:
    empty = tmp_path / "empty.data"
    empty.write_bytes(b"")
    with pytest.raises(UserError, match="empty"):
        perf_data.read(empty)
    garbage = tmp_path / "garbage.data"
    garbage.write_bytes(os.urandom(4096))
    with pytest.raises(UserError, match="not a perf.data"):
        perf_data.read(garbage)
    short = tmp_path / "short.data"
    short.write_bytes(b"PERFILE2" + b"\0" * 20)
    with pytest.raises(UserError, match="truncated"):
        perf_data.read(short)
    with pytest.raises(UserError, match="no such perf.data file"):
        perf_data.read(tmp_path / "missing.data")
    blob = fp_data.read_bytes()
    readers = [False, True] if perf_data.native_available() else [False]
    for cut in (200, len(blob) // 2, len(blob) - 1):
        truncated = tmp_path / f"trunc{cut}.data"
        truncated.write_bytes(blob[:cut])
        for native in readers:
            with pytest.raises(UserError) as err:
                perf_data.read(truncated, use_native=native)
            msg = str(err.value)
            assert "\n" not in msg and str(truncated) in msg and "perf.data" in msg


def test_corrupt_files_never_crash(tmp_path: Path, fp_data: Path) -> None:
    """Corrupt headers (huge counts, sizes) and records give UserError or a profile."""
    import random
    import struct

    blob = fp_data.read_bytes()
    path = tmp_path / "corrupt.data"

    def attempt(data: bytes) -> None:
        path.write_bytes(data)
        try:
            perf_data.read(path, use_native=True)
        except UserError as e:
            assert "\n" not in str(e) and "perf.data" in str(e)

    for off, value in [(16, 0), (16, 7), (32, 1 << 40), (48, 1 << 50), (72, (1 << 64) - 1)]:
        bad = bytearray(blob)
        bad[off : off + 8] = struct.pack("<Q", value)
        path.write_bytes(bytes(bad))
        with pytest.raises(UserError, match="perf.data"):
            perf_data.read(path)
    # a cmdline feature claiming 2^32-1 strings
    data_end = struct.unpack_from("<QQ", blob, 40)
    table = data_end[0] + data_end[1]
    feats = [b for b in range(256) if blob[72 + b // 8] >> (b % 8) & 1]
    if 11 in feats:
        off, _size = struct.unpack_from("<QQ", blob, table + 16 * feats.index(11))
        bad = bytearray(blob)
        bad[off : off + 4] = b"\xff\xff\xff\xff"
        attempt(bytes(bad))
    rnd = random.Random(7)
    for _ in range(60):
        bad = bytearray(blob)
        for _ in range(rnd.choice([1, 4, 30])):
            bad[rnd.randrange(len(bad))] = rnd.randrange(256)
        attempt(bytes(bad[: rnd.randrange(len(bad))] if rnd.random() < 0.3 else bad))


def test_pipe_mode_is_a_user_error(work: Path, tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.data"
    with open(pipe, "wb") as out:
        subprocess.run(
            ["perf", "record", "-q", "-o", "-", "--", str(work / "perf_prog"), "2"],
            stdout=out,
            stderr=subprocess.DEVNULL,
            check=True,
        )
    with pytest.raises(UserError, match="pipe-mode"):
        perf_data.read(pipe)


def test_no_samples_is_a_user_error(tmp_path: Path) -> None:
    data = tmp_path / "none.data"
    subprocess.run(
        ["perf", "record", "-q", "-c", "1000000000000", "-o", str(data), "--", "true"],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    with pytest.raises(UserError, match="no samples"):
        perf_data.read(data)


def test_sniff(fp_data: Path) -> None:
    assert perf_data.sniff(fp_data.read_bytes()[:4096])
    assert not perf_data.sniff(b"prog 1 1.0: 1 cpu-clock: \n")
    assert not perf_data.sniff(b"")


@pytest.mark.parametrize("native", [True, False])
def test_two_events_keep_the_busiest_and_say_so(work: Path, native: bool) -> None:
    if native and not perf_data.native_available():
        pytest.skip("the native reader is not built")
    data = _record(work, "two.data", "-e", "cpu-clock", "-e", "task-clock", "-F", "1000", "-g")
    p = perf_data.read(data, use_native=native)
    (warning,) = p.meta["warnings"]
    assert "samples of 2 events" in warning and f"kept {p.meta['event']}" in warning
    assert "left out" in warning and "record one event per run" in warning
    # the time order keeps the kept event's samples alone, every one of them
    assert p.timeline is not None and p.timeline.samples == p.num_samples


IN_PLACE_RECORDINGS = {
    "frame pointers": ("-F", "4000", "-g"),
    "dwarf": ("-F", "1000", "--call-graph", "dwarf"),
    "two events": ("-e", "cpu-clock", "-e", "task-clock", "-F", "2000", "-g"),
    # compressed records are read by linux-perf-data's iterator either way
    "compressed": ("-z", "-F", "4000", "-g"),
    # samples read from their bytes in place (native/src/reader.rs, Sample::read): the
    # fields before the callchain, and those after it, left unread
    "more sample fields": (
        *("-F", "2000", "-g", "--sample-identifier", "--sample-cpu", "-d", "--phys-data"),
        "-R",
    ),
    "no call graph, fixed period": ("-c", "100000"),
}


@pytest.mark.parametrize("recording", IN_PLACE_RECORDINGS)
def test_records_read_in_place_give_what_the_crates_iterator_gives(
    work: Path, recording: str
) -> None:
    """The native reader's records read in place from a map of the file, in its own
    time order (native/src/records.rs), give every table exactly as linux-perf-data's
    copying iterator does: the same frames, stacks, rows and time order. Two threads
    on two CPUs: perf writes each CPU's records apart, so the file is out of order."""
    if not perf_data.native_available():
        pytest.skip("the native reader is not built")
    import perfsleuth_native

    data = work / f"in-place-{recording.replace(' ', '-')}.data"
    subprocess.run(
        ["perf", "record", "-q", *IN_PLACE_RECORDINGS[recording], "-o", str(data), "--"]
        + [str(_threads_program(work)), "2", "1.0"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    in_place = perfsleuth_native.read_perf_data(str(data))
    copied = perfsleuth_native.read_perf_data(str(data), in_place=False)
    assert in_place["meta"]["num_samples"] > 0
    assert len(in_place["timeline"]["row"]) > 0
    assert in_place == copied


def test_records_read_in_place_order_short_processes_as_the_crate_does(work: Path) -> None:
    """A hundred short processes: each one's first samples lie beside its exec, comm and
    mmap records, written by other CPUs' buffers; read in place, every sample is placed in
    the mappings of its time exactly as by linux-perf-data's iterator."""
    if not perf_data.native_available():
        pytest.skip("the native reader is not built")
    import perfsleuth_native

    data = work / "in-place-short-processes.data"
    loop = "for i in $(seq 100); do ls / > /dev/null; done"
    subprocess.run(
        ["perf", "record", "-q", "-F", "999", "-g", "-o", str(data), "--", "bash", "-c", loop],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    in_place = perfsleuth_native.read_perf_data(str(data))
    assert len({t["pid"] for t in in_place["threads"]}) > 50
    assert in_place == perfsleuth_native.read_perf_data(str(data), in_place=False)
