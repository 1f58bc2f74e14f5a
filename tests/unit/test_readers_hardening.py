"""Issue 19, the readers: hostile inputs refused in one line, formats as their writers
write them. Fixtures in tests/fixtures/readers/ (see its README for where each comes from).

Long-line and bomb cases run in a child process under an address-space limit and a
generous timeout: they assert "finishes" or "refuses", never a time.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfsleuth.cli import main
from perfsleuth.errors import UserError
from perfsleuth.formats import detect, folded, limits, perf_script, pprof, read_any
from perfsleuth.formats import profile_pb2 as pb
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.present.folded import lines
from perfsleuth.present.pprof import encode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
READERS = FIXTURES / "readers"
CALLGRIND = FIXTURES / "callgrind.out.hot"
# Python, protobuf and DuckDB map ~0.5 GB of address space before reading anything.
AS_LIMIT = 1536 << 20
PERFSLEUTH = str(Path(sys.executable).parent / "perfsleuth")


def run_limited(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`code` in a child Python under AS_LIMIT bytes of address space and a 120 s timeout."""
    prelude = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({AS_LIMIT}, {AS_LIMIT}))\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def import_cli(tmp_path: Path, *args: str) -> int:
    return main(["import", "--store", str(tmp_path / "store"), *args])


# --- 1. linear time on long lines ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "main;a 1\nx" + " " * 200_000 + "y\n",
        "main;a 1\n" + "a;" * 100_000 + " " * 100_000 + "1\n",
        "prog 1 1.0: 1 cpu-clock:\n\t1 f (/x)\n\nx" + " " * 200_000 + "y\n",
        "prog 1 1.0: 1 cpu-clock:\n\t1" + " " * 200_000 + "f (/x)\n",
        "prog 1 1.0: 1 cpu-clock:\n\t1 f (/x)\n\n" + "a 1 " * 60_000 + "\n",
        "p" + " 1" * 100_000 + ": \n\t1 f (/x)\n",
    ],
    ids=["folded-spaces", "folded-frames", "perf-spaces", "perf-frame", "perf-tokens", "perf-ids"],
)
def test_long_lines_finish(tmp_path: Path, text: str) -> None:
    path = tmp_path / "long.txt"
    path.write_text(text)
    done = run_limited(
        f"""
        from perfsleuth.errors import UserError
        from perfsleuth.formats import read_any
        try:
            read_any({str(path)!r})
        except UserError as e:
            print("refused:", e)
        print("finished")
        """
    )
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout


# --- 2. bounded gunzip ----------------------------------------------------------------


def test_gzip_bomb_is_refused_naming_the_limit(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.pb.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        chunk = bytes(1 << 20)
        for _ in range(64):
            f.write(chunk)
    done = run_limited(
        f"""
        from perfsleuth.errors import UserError
        from perfsleuth.formats import pprof
        try:
            pprof.read({str(bomb)!r})
        except UserError as e:
            print(e)
        """,
        env={limits.MAX_INPUT_ENV: "16"},
    )
    assert done.returncode == 0, done.stderr
    assert "larger than 16 MB decompressed" in done.stdout
    assert limits.MAX_INPUT_ENV in done.stdout


def test_max_size_option_and_limit_of_plain_files(tmp_path: Path, capsys) -> None:
    path = pprof_with(tmp_path, 10, comment="x" * (3 << 20))
    assert import_cli(tmp_path, "--max-size", "1", str(path)) == 2
    assert "larger than 1 MB decompressed" in capsys.readouterr().err
    plain = tmp_path / "p.pb"
    plain.write_bytes(bytes(3 << 20))
    with pytest.raises(UserError, match="larger than 1 MB on disk"):
        pprof.read(plain, max_bytes=1 << 20)
    with pytest.raises(UserError, match="positive number of MB"):
        limits.max_input_bytes(0)


def test_concatenated_gzip_members_are_read() -> None:
    data = gzip.compress(b"ab") + gzip.compress(b"cd")
    assert limits.gunzip(data, "x", 10) == b"abcd"


# --- 3. no tracebacks -------------------------------------------------------------------


def test_huge_folded_count_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.folded"
    path.write_text("main;a 1\nmain;b " + "9" * 5000 + "\n")
    with pytest.raises(UserError, match=r"^big.folded:2: value not finite is out of range"):
        folded.read(path)


def test_proc_self_mem_is_a_user_error(tmp_path: Path, capsys) -> None:
    assert import_cli(tmp_path, "/proc/self/mem") == 2
    assert "cannot read (Input/output error)" in capsys.readouterr().err


# --- 4. values past the store's columns are refused by the reader ------------------------


def pprof_with(tmp_path: Path, *values: int, location_ids=(7,), comment: str = "") -> Path:
    m = pb.Profile(string_table=["", "cpu", "nanoseconds", "main", "prog.c", "/bin/prog", comment])
    m.sample_type.add(type=1, unit=2)
    m.mapping.add(id=1, filename=5)
    m.function.add(id=1, name=3, filename=4)
    for lid in location_ids:
        m.location.add(id=lid, mapping_id=1).line.add(function_id=1, line=3)
    for v in values:
        m.sample.add(location_id=[location_ids[0]], value=[v])
    path = tmp_path / "p.pb.gz"
    path.write_bytes(gzip.compress(m.SerializeToString()))
    return path


@pytest.mark.parametrize("value", [10**18, -5, -(2**63)])
def test_pprof_values_out_of_range_are_refused(tmp_path: Path, value: int) -> None:
    with pytest.raises(UserError, match=r"^p.pb.gz: sample 1 value: value .* out of range"):
        pprof.read(pprof_with(tmp_path, 10, value))


def test_refused_import_leaves_the_store_unchanged(tmp_path: Path, capsys) -> None:
    path = tmp_path / "e30.folded"
    path.write_text("main;a 1000000000000000000000000000000\n")
    assert import_cli(tmp_path, str(path)) == 2
    err = capsys.readouterr().err
    assert "e30.folded:1: value 1e+30 is out of range" in err and "Conversion" not in err
    assert not (tmp_path / "store").exists()


# --- 5. nonsense is refused -------------------------------------------------------------


def test_pprof_duplicate_and_zero_location_ids(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="location id 7 is used twice"):
        pprof.read(pprof_with(tmp_path, 1, location_ids=(7, 7)))
    with pytest.raises(UserError, match="a location has id 0"):
        pprof.read(pprof_with(tmp_path, 1, location_ids=(0,)))


def test_callgrind_cut_in_half_is_refused(tmp_path: Path) -> None:
    text = CALLGRIND.read_text()
    cut = tmp_path / "callgrind.out.cut"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(UserError, match=r"summary/totals line says 514,572; the file is cut"):
        read_any(cut)


def test_cachegrind_cut_short_is_refused(tmp_path: Path) -> None:
    """cachegrind writes its summary: last, so a cut file has none to check against."""
    text = (CALLGRIND.parent / "cachegrind.out.hot").read_text()
    cut = tmp_path / "cachegrind.out.cut"
    cut.write_text(text[: text.rindex("summary:")])
    with pytest.raises(UserError, match=r"no summary: or totals: line.*the file is cut short"):
        read_any(cut)
    whole = tmp_path / "cachegrind.out.whole"
    whole.write_text(text)
    assert read_any(whole)[0].num_samples > 0


@pytest.mark.parametrize("cost", ["-5", "1" + "0" * 40])
def test_callgrind_costs_out_of_range(tmp_path: Path, cost: str) -> None:
    path = tmp_path / "callgrind.out.1"
    path.write_text(f"events: Ir\nfl=a.c\nfn=main\n3 {cost}\n")
    with pytest.raises(UserError, match=r"^callgrind.out.1:4: .*(out of range|expected event)"):
        read_any(path)


# --- 6. a FIFO is refused at once; stdin only when asked --------------------------------


def test_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = subprocess.run(
        [PERFSLEUTH, "import", "--store", str(tmp_path / "s"), str(fifo)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "not a regular file" in done.stderr


def test_import_from_stdin(tmp_path: Path) -> None:
    done = subprocess.run(
        [PERFSLEUTH, "import", "--store", str(tmp_path / "s"), "-"],
        input=(FIXTURES / "hot.folded").read_bytes(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert b"imported stdin (folded, 850 samples)" in done.stderr


# --- 14-16. perf script as perf writes it ----------------------------------------------


def folded_shape(text_lines) -> list[tuple[int, int, str]]:
    """(depth, kernel frames, weight) per folded line: names differ by convention only
    (stackcollapse-perf.pl strips C++ arguments and Java `L` prefixes, we keep them)."""
    out = []
    for line in text_lines:
        stack, weight = line.rsplit(" ", 1)
        out.append((stack.count(";"), stack.count("_[k]"), weight))
    return sorted(out)


@pytest.mark.parametrize("name", ["perf-js-stacks-01", "perf-java-stacks-02"])
def test_stacks_as_stackcollapse_perf_reads_them(name: str) -> None:
    p, fmt = read_any(READERS / f"{name}.txt")
    assert fmt == "perf_script"
    expected = (READERS / f"{name}.collapsed-kernel").read_text().splitlines()
    # stackcollapse-perf.pl puts the command first; perfsleuth keeps it as the thread's name
    assert folded_shape(lines(p)) == folded_shape(ln.split(";", 1)[1] for ln in expected)


def test_spaces_indented_chains_keep_their_stacks() -> None:
    p = perf_script.read(READERS / "perf-js-stacks-01.txt")
    assert all(p.stacks[s] for s in p.sample_stack)
    assert any(f.function == "uv_run" for f in p.frames)


def test_perf_script_header_output_is_detected() -> None:
    path = READERS / "perf-header.txt"
    assert sum(line.startswith("#") for line in path.open()) == 28
    assert detect(path) is perf_script
    assert read_any(path)[0].num_samples == 3


def test_folded_first_line_longer_than_4_kib() -> None:
    path = READERS / "deep-recursion.folded"
    assert len(path.read_text().splitlines()[0]) > 4096
    assert detect(path) is folded
    p = folded.read(path)
    assert max(len(s) for s in p.stacks) > 100


# --- 17. input that yields no stacks is refused ------------------------------------------


GO_HEAP = """\
heap profile: 1: 262144 [1: 262144] @ heap/1048576
1: 262144 [1: 262144] @ 0x1023c5c 0x102c22d 0x105b5a1
#	0x1023c5b	runtime.malg+0x2b	/usr/local/go/src/runtime/proc.go:3344
#	0x102c22c	runtime.newproc1+0x48c	/usr/local/go/src/runtime/proc.go:3419

# runtime.MemStats
# Alloc = 1234
"""


def test_go_legacy_heap_profile_is_not_taken_for_perf_script(tmp_path: Path) -> None:
    path = tmp_path / "heap.prof"
    path.write_text(GO_HEAP)
    with pytest.raises(UserError, match=r"^heap.prof: .*no sample has a stack"):
        read_any(path)


# --- 18. backticks: DTrace modules, not .NET generics; exports keep module prefixes -----


def test_dotnet_generic_arity_is_not_a_module() -> None:
    p = folded.read(READERS / "dotnet-vsprof.folded")
    names = {f.function for f in p.frames}
    assert "System.Collections.Generic.List`1..ctor()" in names
    assert not any(f.dso for f in p.frames)


def test_dtrace_modules_round_trip(tmp_path: Path) -> None:
    source = READERS / "dtrace-rust.folded"
    p = folded.read(source)
    assert {f.dso for f in p.frames} >= {"rg", "libsystem_pthread.dylib"}
    assert "\n".join(lines(p)) + "\n" == "".join(sorted(source.open()))


def test_export_round_trip_through_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    main(["import", "--store", str(store), str(READERS / "dtrace-rust.folded")])
    out = tmp_path / "out.folded"
    assert main(["export", "--store", str(store), "--folded", str(out)]) == 0
    assert out.read_text().count("rg`") >= 6


# --- 19. exports keep fractional weights ---------------------------------------------------


def test_folded_export_keeps_decimals_and_pprof_keeps_the_total(tmp_path: Path) -> None:
    b = ProfileBuilder(unit="samples")
    for i, w in enumerate([334.6, 2.567, 0.4, 0.4, 0.4]):
        b.add([Frame(f"f{i}"), Frame("main")], w)
    p = b.build()
    assert "main;f0 334.6" in lines(p) and "main;f1 2.567" in lines(p)
    path = tmp_path / "p.pb.gz"
    path.write_bytes(encode(p))
    q = pprof.read(path)
    assert q.total == round(p.total) == 338
    pairs = zip(sorted(q.sample_weight), sorted(p.sample_weight), strict=True)
    assert all(abs(a - b) <= 1 for a, b in pairs)


# --- 20. one folded line per distinct stack text ------------------------------------------


def test_frames_differing_only_in_line_give_one_folded_line() -> None:
    b = ProfileBuilder(unit="samples")
    b.add([Frame("work", file="a.c", line=3), Frame("main")], 2)
    b.add([Frame("work", file="a.c", line=4), Frame("main")], 5)
    assert lines(b.build()) == ["main;work 7"]


# --- 21. the smaller items ------------------------------------------------------------------


PLT = """\
prog 10 1.0: 1 cpu-clock:
\t1000 gettimeofday@plt+0x4 (/nonexistent/prog)
\t1100 main+0x10 (/nonexistent/prog)

prog 10 1.1: 1 cpu-clock:
\t2000 gettimeofday@@GLIBC_2.2.5+0x4 (/nonexistent/libc.so.6)
\t1100 main+0x10 (/nonexistent/prog)
"""


def test_plt_stubs_keep_their_name_and_versions_go() -> None:
    p = perf_script.read_text(PLT)
    names = {f.function for f in p.frames}
    assert {"gettimeofday@plt", "gettimeofday", "main"} == names


def test_vmlinux_frames_are_kernel_frames() -> None:
    p = perf_script.read(READERS / "perf-dd-stacks-01.txt")
    vmlinux = [f for f in p.frames if f.dso.startswith("vmlinux")]
    assert vmlinux and all(f.kernel for f in vmlinux)
    assert any(line.endswith("fsnotify_[k] 10101010") for line in lines(p))


def test_jit_marks_and_blank_frames_are_kept(tmp_path: Path) -> None:
    p = folded.read(READERS / "java-jit.folded")
    assert any(f.function.endswith("_[j]") for f in p.frames)
    path = tmp_path / "blank.folded"
    path.write_text("a;;b; 3\n")
    q = folded.read(path)
    assert lines(q) == ["a;;b 3"]


def test_mixed_events_warn_naming_the_event_kept() -> None:
    p = perf_script.read(READERS / "perf-mixed-events.txt")
    (warning,) = p.meta["warnings"]
    assert f"kept {p.meta['event']}" in warning and "cpu-clock" in warning
    assert p.num_samples == 20


def test_old_perf_without_times_and_with_unindented_frames() -> None:
    path = READERS / "perf-java-stacks-02.txt"
    assert detect(path) is perf_script
    p = perf_script.read(path)
    assert max(len(s) for s in p.stacks) == 24


def test_folded_bad_lines_are_skipped_and_named(tmp_path: Path, capsys) -> None:
    p = folded.read(READERS / "inferno-bad-lines.folded")
    assert p.meta["warnings"] == [
        "inferno-bad-lines.folded: skipped 2 line(s) that are not `frame;frame;... count` "
        "(line 3, 6)"
    ]
    assert import_cli(tmp_path, str(READERS / "inferno-bad-lines.folded")) == 0
    assert "warning: inferno-bad-lines.folded: skipped 2 line(s)" in capsys.readouterr().err
    only_bad = tmp_path / "bad.folded"
    only_bad.write_text("THIS IS A BAD LINE\nneither is this\n")
    with pytest.raises(UserError, match=r"^bad.folded:1: expected `frame;frame;\.\.\. count`"):
        folded.read(only_bad)
