"""pprof reader and writer.

go-cpu.pb.gz is a real CPU profile written by `go test -cpuprofile` on the
benchmark in tests/fixtures/src/gobench; the expected numbers are what
`go tool pprof -top` prints for it.
"""

from __future__ import annotations

import gzip
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.formats import pprof
from perfsleuth.formats import profile_pb2 as pb
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread
from perfsleuth.present.pprof import encode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GO_PROFILE = FIXTURES / "go-cpu.pb.gz"
MS = 1_000_000


def flat_and_cum(p: Profile) -> tuple[dict[str, float], dict[str, float]]:
    flat: dict[str, float] = defaultdict(float)
    cum: dict[str, float] = defaultdict(float)
    for stack, weight, *_ in p.rows():
        flat[p.frames[stack[0]].function] += weight
        for name in {p.frames[f].function for f in stack}:
            cum[name] += weight
    return flat, cum


def rows_by_content(p: Profile) -> Counter:
    """The profile's samples with frames and threads resolved, for comparing profiles."""
    out: Counter = Counter()
    for stack, weight, count, tid, state in p.rows():
        frames = tuple(p.frames[f] for f in stack)
        thread = p.threads[tid] if tid >= 0 else None
        out[frames, thread, state] += weight
        out["count", frames, thread, state] += count
    return out


def test_reads_go_cpu_profile() -> None:
    p = pprof.read(GO_PROFILE)
    assert p.unit == "ns"
    assert p.total == 1240 * MS  # "Total samples = 1240ms"
    assert p.num_samples == 124
    assert p.meta["period"] == 10 * MS
    assert p.meta["sample_type"] == "cpu/nanoseconds"
    flat, cum = flat_and_cum(p)
    assert flat["slices.partitionOrdered[go.shape.int]"] == 620 * MS
    assert cum["slices.partitionOrdered[go.shape.int]"] == 780 * MS
    assert flat["cmp.Less[go.shape.int]"] == 120 * MS  # an inlined function
    assert cum["gobench.work"] == 1190 * MS


def test_inlined_lines_become_inlined_frames() -> None:
    p = pprof.read(GO_PROFILE)
    less = [f for f in p.frames if f.function == "cmp.Less[go.shape.int]"]
    assert less and all(f.inlined and f.file.endswith("cmp/cmp.go") and f.line > 0 for f in less)
    work = [f for f in p.frames if f.function == "gobench.work"]
    assert work and all(f.dso.endswith("gobench.test") for f in work)
    for stack in p.stacks:  # the outermost frame of a stack is never inlined
        assert not p.frames[stack[-1]].inlined


def test_plain_and_gzipped_read_the_same(tmp_path: Path) -> None:
    plain = tmp_path / "cpu.pb"
    plain.write_bytes(gzip.decompress(GO_PROFILE.read_bytes()))
    assert rows_by_content(pprof.read(plain)) == rows_by_content(pprof.read(GO_PROFILE))


def test_round_trip_of_go_profile(tmp_path: Path) -> None:
    p = pprof.read(GO_PROFILE)
    out = tmp_path / "out.pb.gz"
    out.write_bytes(encode(p))
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    q = pprof.read(out)
    assert q.unit == "ns" and q.meta["period"] == p.meta["period"]
    assert q.meta["duration_ns"] == p.meta["duration_ns"]
    assert rows_by_content(q) == rows_by_content(p)


def test_round_trip_with_threads_states_and_kernel(tmp_path: Path) -> None:
    b = ProfileBuilder(unit="ns", meta={"duration_s": 1.5})
    main = Frame("main", "/bin/prog", "prog.c", 10)
    helper = Frame("helper", "/bin/prog", "prog.h", 3, inlined=True)
    read = Frame("ksys_read", "[kernel.kallsyms]", kernel=True)
    t1, t2 = Thread(11, 10, "worker"), Thread(12, 10)
    b.add([helper, main], 300.0, count=3, thread=t1, state="running")
    b.add([read, main], 200.0, count=2, thread=t2, state="io")
    b.add([main], 100.0)
    p = b.build()
    out = tmp_path / "p.pb.gz"
    out.write_bytes(encode(p))
    q = pprof.read(out)
    assert rows_by_content(q) == rows_by_content(p)
    assert q.meta["duration_ns"] == 1_500_000_000


def test_export_keeps_build_ids_and_the_kernel_mapping() -> None:
    """The export and the agent's wire format share one message builder: mappings carry
    the profile's build-ids, and kernel frames without a DSO get the kernel's mapping."""
    b = ProfileBuilder(unit="samples")
    b.add([Frame("schedule", "", kernel=True), Frame("main", "/bin/prog", "prog.c", 10)], 1.0)
    p = b.build()
    p.dsos = [{"path": "/bin/prog", "build_id": "abc123"}]
    msg = pb.Profile.FromString(gzip.decompress(encode(p)))
    mappings = {msg.string_table[m.filename]: msg.string_table[m.build_id] for m in msg.mapping}
    assert mappings == {"/bin/prog": "abc123", "[kernel.kallsyms]": ""}


def test_export_names_the_program_as_its_first_mapping() -> None:
    """pprof takes mapping 1 for the program: not the dynamic loader whose code ran first."""
    b = ProfileBuilder(unit="samples")
    b.add([Frame("_dl_start", "/lib64/ld-linux-x86-64.so.2")], 1.0)
    b.add([Frame("memcpy", "/lib/x86_64-linux-gnu/libc.so.6"), Frame("main", "/bin/prog")], 1.0)
    b.add([Frame("work", "/bin/prog"), Frame("main", "/bin/prog")], 5.0)
    msg = pb.Profile.FromString(gzip.decompress(encode(b.build())))
    assert msg.string_table[msg.mapping[0].filename] == "/bin/prog"
    assert msg.mapping[0].id == 1


@pytest.mark.parametrize("unit", ["samples", "bytes", "instructions", "events"])
def test_units_survive_a_round_trip(tmp_path: Path, unit: str) -> None:
    b = ProfileBuilder(unit=unit)
    b.add([Frame("f")], 7.0, count=7)
    out = tmp_path / "p.pb.gz"
    out.write_bytes(encode(b.build()))
    q = pprof.read(out)
    assert q.unit == unit and q.total == 7.0 and q.num_samples == 7


def valid_message() -> pb.Profile:
    m = pb.Profile(string_table=["", "cpu", "nanoseconds", "main", "prog.c", "/bin/prog"])
    m.sample_type.add(type=1, unit=2)
    m.mapping.add(id=1, filename=5)
    m.function.add(id=1, name=3, filename=4)
    loc = m.location.add(id=7, mapping_id=1)
    loc.line.add(function_id=1, line=3)
    m.sample.add(location_id=[7], value=[10])
    return m


def save(tmp_path: Path, m: pb.Profile) -> Path:
    path = tmp_path / "profile.pb.gz"
    path.write_bytes(gzip.compress(m.SerializeToString()))
    return path


def test_valid_message_reads(tmp_path: Path) -> None:
    p = pprof.read(save(tmp_path, valid_message()))
    assert p.frames == [Frame("main", "/bin/prog", "prog.c", 3)] and p.total == 10


def break_function(m: pb.Profile) -> None:
    m.location[0].line[0].function_id = 99


def break_location(m: pb.Profile) -> None:
    m.sample[0].location_id[0] = 8


def break_mapping(m: pb.Profile) -> None:
    m.location[0].mapping_id = 4


def break_string(m: pb.Profile) -> None:
    m.function[0].name = 40


def break_values(m: pb.Profile) -> None:
    m.sample[0].value.append(1)


def break_first_string(m: pb.Profile) -> None:
    m.string_table[0] = "x"


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (break_function, "location 7 refers to function 99 which does not exist"),
        (break_location, "sample 0 refers to location 8 which does not exist"),
        (break_mapping, "location 7 refers to mapping 4 which does not exist"),
        (break_string, "function 1 refers to string 40 which does not exist"),
        (break_values, "sample 0 has 2 values for 1 types"),
        (break_first_string, 'string_table\\[0\\] must be ""'),
    ],
)
def test_bad_indices_are_user_errors(tmp_path: Path, corrupt, message: str) -> None:
    m = valid_message()
    corrupt(m)
    with pytest.raises(UserError, match=f"^profile.pb.gz: {message}; the file is corrupt$"):
        pprof.read(save(tmp_path, m))


def test_garbage_and_truncated_files_are_user_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pb"
    garbage.write_bytes(b"\xff\xff\xff\xff not a protobuf")
    with pytest.raises(UserError, match="garbage.pb: not a valid pprof profile"):
        pprof.read(garbage)
    truncated = tmp_path / "cut.pb.gz"
    truncated.write_bytes(GO_PROFILE.read_bytes()[:500])
    with pytest.raises(UserError, match="cut.pb.gz: broken gzip data"):
        pprof.read(truncated)
    no_types = tmp_path / "empty.pb"
    no_types.write_bytes(pb.Profile(string_table=[""]).SerializeToString())
    with pytest.raises(UserError, match="no sample_type"):
        pprof.read(no_types)


def test_sniff() -> None:
    head = gzip.decompress(GO_PROFILE.read_bytes())[:4096]
    assert pprof.sniff(head)
    assert pprof.sniff(valid_message().SerializeToString())
    assert not pprof.sniff(b"main;leaf 12\n")
    assert not pprof.sniff(b"# callgrind format\nevents: Ir\n")
    assert not pprof.sniff(b"PERFILE2" + bytes(100))
    assert not pprof.sniff(b"")
