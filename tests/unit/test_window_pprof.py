"""The agent's wire format: a Window survives encode -> decode, and hostile pprofs are refused."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from perfsleuth.formats import profile_pb2 as pb
from perfsleuth.formats.wire import ingest, window_pprof
from perfsleuth.formats.wire.ingest import IngestParams, PayloadError
from perfsleuth.model.fleet import Process, Window
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread

GO_PROFILE = Path(__file__).resolve().parents[1] / "fixtures" / "go-cpu.pb.gz"
START = 1_700_000_000.0


def agent_window() -> Window:
    b = ProfileBuilder(unit="samples")
    main = Frame("main", dso="/usr/bin/app", file="app.c", line=10)
    inlined = Frame("helper", dso="/usr/bin/app", file="app.c", line=3, inlined=True)
    work = Frame("work", dso="/usr/bin/app", file="app.c", line=20)
    kernel = Frame("do_syscall_64", dso="[kernel.kallsyms]", kernel=True)
    unsymbolized = Frame("0x1234", dso="/usr/lib/libz.so.1")
    web = Thread(tid=101, pid=100, name="web")
    b.add([inlined, work, main], 7, count=7, thread=web)
    b.add([kernel, work, main], 3, count=3, thread=Thread(tid=100, pid=100, name="web"))
    b.add([unsymbolized, main], 2, count=2, thread=Thread(tid=201, pid=200, name="db"))
    b.add([main], 1, count=1)
    profile = b.build()
    profile.dsos = [{"path": "/usr/bin/app", "build_id": "abc123"}]
    return Window(
        id="host1-1700000000",
        start=START,
        end=START + 10,
        profile=profile,
        labels={"host": "host1", "service": "api", "env": "prod"},
        processes={
            100: Process(
                exe="/usr/bin/app",
                build_id="abc123",
                cgroup="/system.slice/app",
                libraries=("/usr/lib/libc.so.6", "/usr/lib/libz.so.1.2.13"),
            ),
            300: Process(libraries=("/usr/lib/libssl.so.3",)),  # no sample of its own
        },
        rate_hz=19.0,
    )


def params_of(window: Window) -> IngestParams:
    return IngestParams.parse(window_pprof.query(window), window.id)


def rows(window: Window) -> set[tuple]:
    p = window.profile
    return {
        (tuple(p.frames[f] for f in stack), w, c, p.threads[t] if t >= 0 else None)
        for stack, w, c, t, _ in p.rows()
    }


def test_round_trip_keeps_samples_threads_processes_labels_and_times() -> None:
    sent = agent_window()
    [got] = window_pprof.decode(window_pprof.encode(sent), params_of(sent))
    assert got.id == sent.id
    assert (got.start, got.end, got.rate_hz) == (sent.start, sent.end, sent.rate_hz)
    assert got.labels == sent.labels
    assert got.processes == sent.processes
    assert rows(got) == rows(sent)
    assert got.profile.dsos == [{"path": "/usr/bin/app", "build_id": "abc123"}]


def test_the_libraries_of_a_busy_host_travel_past_the_name_limit() -> None:
    """A host with many processes lists far more than 16 KB of library paths."""
    sent = agent_window()
    paths = tuple(f"/usr/lib/x86_64-linux-gnu/libexample{i}.so.1" for i in range(200))
    sent.processes = {pid: Process(libraries=paths) for pid in range(1000, 1010)}
    [got] = window_pprof.decode(window_pprof.encode(sent), params_of(sent))
    assert got.processes == sent.processes


BUILD_ID = "5792ee8d670a0ee8270426e02743b36060bb1514"


def test_an_unsymbolized_frame_keeps_its_build_id_and_address() -> None:
    b = ProfileBuilder(unit="samples")
    unknown = Frame("[unknown] app+0x11e0", dso="app", build_id=BUILD_ID, address=0x11E0)
    other = Frame("[unknown] app+0x1230", dso="app", build_id=BUILD_ID, address=0x1230)
    main = Frame("main", dso="app", file="app.c", line=3)
    b.add([unknown, other, main], 5, count=5, thread=Thread(tid=1, pid=1, name="app"))
    sent = Window(id="w1", start=START, end=START + 1, profile=b.build(), rate_hz=19.0)
    [got] = window_pprof.decode(window_pprof.encode(sent), params_of(sent))
    assert rows(got) == rows(sent)


def foreign(build_id: str, memory_start: int = 0) -> pb.Profile:
    """A pprof as other profilers send unsymbolized code: an address, no lines."""
    msg = pb.Profile(string_table=["", "samples", "count", "/usr/lib/libfoo.so.1", build_id])
    msg.sample_type.add(type=1, unit=2)
    msg.mapping.add(id=1, memory_start=memory_start, filename=3, build_id=4)
    msg.location.add(id=1, mapping_id=1, address=memory_start + 0x1230)
    msg.sample.add(location_id=[1], value=[4])
    return msg


def test_an_elf_address_without_lines_in_a_pprof_keeps_its_build_id() -> None:
    """Kept when the address is the ELF's own (the mapping starts at 0); a process
    address would need the file's program headers, and a Go build id is not GNU's."""
    params = IngestParams.parse({"name": "foo", "from": str(START), "until": str(START + 1)}, "w2")
    [got] = window_pprof.decode(foreign(BUILD_ID.upper()).SerializeToString(), params)
    [frame] = got.profile.frames
    assert (frame.build_id, frame.address, frame.dso) == (BUILD_ID, 0x1230, "/usr/lib/libfoo.so.1")
    for msg in (foreign("go-build/id:not/hex"), foreign(BUILD_ID, memory_start=0x7F0000000000)):
        [other] = window_pprof.decode(msg.SerializeToString(), params)
        assert (other.profile.frames[0].build_id, other.profile.frames[0].address) == ("", 0)


def test_round_trip_of_nanosecond_weights() -> None:
    b = ProfileBuilder(unit="ns")
    b.add([Frame("f"), Frame("main")], 5_000_000.0, count=5, thread=Thread(tid=1, pid=1, name="x"))
    sent = Window(id="w1", start=START, end=START + 1, profile=b.build())
    [got] = window_pprof.decode(window_pprof.encode(sent), params_of(sent))
    assert got.profile.unit == "ns" and got.rate_hz == 0.0
    assert rows(got) == rows(sent)


def test_a_go_cpu_profile_decodes_in_nanoseconds() -> None:
    params = IngestParams(window_id="go", start=START, end=START + 10)
    [window] = window_pprof.decode(GO_PROFILE.read_bytes(), params)
    assert window.profile.unit == "ns"
    assert window.profile.num_samples > 0 and window.profile.total > 0


def hostile(edit) -> bytes:
    msg = pb.Profile.FromString(gzip.decompress(window_pprof.encode(agent_window())))
    edit(msg)
    return msg.SerializeToString()


def negative(msg: pb.Profile) -> None:
    msg.sample[0].value[0] = -5


def huge(msg: pb.Profile) -> None:
    msg.sample[0].value[0] = 1 << 62


def missing_location(msg: pb.Profile) -> None:
    msg.sample[0].location_id.append(999)


def deep(msg: pb.Profile) -> None:
    msg.sample[0].location_id.extend([1] * (ingest.MAX_STACK_DEPTH + 1))


def unknown_type(msg: pb.Profile) -> None:
    msg.string_table.extend(["bananas", "bytes"])
    msg.sample_type[0].type = len(msg.string_table) - 2
    msg.sample_type[0].unit = len(msg.string_table) - 1


def long_label(msg: pb.Profile) -> None:
    msg.string_table.append("x" * (ingest.MAX_LABEL_VALUE + 1))
    msg.sample[0].label.add(key=1, str=len(msg.string_table) - 1)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (negative, "negative"),
        (huge, "too large"),
        (missing_location, "location 999"),
        (deep, "deeper than"),
        (unknown_type, "no profile type perfsleuth stores"),
        (long_label, "at most 1024"),
    ],
)
def test_hostile_profiles_are_refused_with_the_reason(edit, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        window_pprof.decode(hostile(edit), params_of(agent_window()))


def test_garbage_bad_utf8_and_gzip_bombs_are_refused() -> None:
    params = params_of(agent_window())
    with pytest.raises(PayloadError, match="not a valid pprof"):
        window_pprof.decode(b"\xff\xff\xff\xff", params)
    bad_utf8 = b"\x32\x02\xff\xfe"  # string_table entry (field 6) with invalid UTF-8
    with pytest.raises(PayloadError, match="not a valid pprof"):
        window_pprof.decode(bad_utf8, params)
    bomb = gzip.compress(b"\0" * (2 << 20))
    with pytest.raises(PayloadError, match="limit of 1 MB"):
        window_pprof.decode(bomb, params, limit=1 << 20)


@pytest.mark.parametrize(
    "comment",
    [
        "perfsleuth-libraries [1, 2]",
        "perfsleuth-libraries {not json",
        'perfsleuth-libraries {"100": "/usr/lib/libc.so.6"}',
        'perfsleuth-libraries {"100": [7]}',
        'perfsleuth-libraries {"-1": ["/usr/lib/libc.so.6"]}',
    ],
)
def test_a_bad_libraries_comment_is_refused(comment: str) -> None:
    sent = agent_window()
    msg = pb.Profile.FromString(gzip.decompress(window_pprof.encode(sent)))
    del msg.comment[:]
    msg.string_table.append(comment)
    msg.comment.append(len(msg.string_table) - 1)
    with pytest.raises(PayloadError):
        window_pprof.decode(msg.SerializeToString(), params_of(sent))


def test_a_thread_of_unknown_pid_travels_and_is_accepted() -> None:
    """perf gives -1 for a sample whose pid it does not know: the agent sends no pid
    label then, and a client's negative pid is read as not known, never refused."""
    b = ProfileBuilder(unit="samples")
    b.add([Frame("f")], 3, count=3, thread=Thread(tid=-1, pid=-1, name="swapper"))
    sent = Window(id="w1", start=START, end=START + 1, profile=b.build(), rate_hz=19.0)
    [got] = window_pprof.decode(window_pprof.encode(sent), params_of(sent))
    [thread] = got.profile.threads
    assert (thread.pid, thread.tid, thread.name) == (0, 0, "swapper")
    msg = pb.Profile.FromString(gzip.decompress(window_pprof.encode(agent_window())))
    msg.sample[0].label[0].num = -1  # a client's negative pid
    [window, *_] = window_pprof.decode(msg.SerializeToString(), params_of(agent_window()))
    assert window.profile.num_samples == agent_window().profile.num_samples


def test_per_sample_string_labels_split_the_push_into_windows() -> None:
    msg = pb.Profile.FromString(gzip.decompress(window_pprof.encode(agent_window())))
    msg.string_table.extend(["team", "sre"])
    msg.sample[0].label.add(key=len(msg.string_table) - 2, str=len(msg.string_table) - 1)
    first, tagged = window_pprof.decode(msg.SerializeToString(), params_of(agent_window()))
    assert (first.id, tagged.id) == ("host1-1700000000", "host1-1700000000.1")
    assert tagged.labels == {**agent_window().labels, "team": "sre"}
    assert "team" not in first.labels
    total = first.profile.num_samples + tagged.profile.num_samples
    assert tagged.profile.num_samples == 7 and total == agent_window().profile.num_samples


def test_a_pyroscope_thread_name_is_the_samples_comm_not_a_label() -> None:
    """pyroscope-io's report_thread_name sends `thread_name`: perfsleuth's comm."""
    msg = pb.Profile.FromString(gzip.decompress(window_pprof.encode(agent_window())))
    msg.string_table.extend(["thread_name", "MainThread"])
    for sample in msg.sample:
        del sample.label[:]
    msg.sample[0].label.add(key=len(msg.string_table) - 2, str=len(msg.string_table) - 1)
    [window] = window_pprof.decode(msg.SerializeToString(), params_of(agent_window()))
    assert "thread_name" not in window.labels
    assert [t.name for t in window.profile.threads] == ["MainThread"]


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 as protobuf writes it: two's complement
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes([value])


def _unpacked(sample: pb.Sample) -> bytes:
    """Field 2 of a Profile: the sample with its location ids and values one field each
    (protobuf's other encoding of repeated numbers, which proto2 writers use)."""
    body = b"".join(b"\x08" + _varint(lid) for lid in sample.location_id)
    body += b"".join(b"\x10" + _varint(v) for v in sample.value)
    body += pb.Sample(label=sample.label).SerializeToString()
    return b"\x12" + _varint(len(body)) + body


def test_unpacked_location_ids_and_values_read_as_packed_ones() -> None:
    sent = agent_window()
    msg = pb.Profile.FromString(gzip.decompress(window_pprof.encode(sent)))
    rest = pb.Profile()
    rest.CopyFrom(msg)
    del rest.sample[:]
    unpacked = rest.SerializeToString() + b"".join(_unpacked(s) for s in msg.sample)
    assert unpacked != msg.SerializeToString()
    [packed_window] = window_pprof.decode(msg.SerializeToString(), params_of(sent))
    [unpacked_window] = window_pprof.decode(unpacked, params_of(sent))
    assert rows(unpacked_window) == rows(packed_window) == rows(sent)


def test_two_locations_of_one_line_are_one_stack() -> None:
    """Two addresses of the same line (two locations) give the same frames: one stack."""
    sent = agent_window()
    msg = pb.Profile.FromString(gzip.decompress(window_pprof.encode(sent)))
    first = msg.sample[0]
    twin = msg.location.add()
    twin.CopyFrom(next(loc for loc in msg.location if loc.id == first.location_id[0]))
    twin.id, twin.address = max(loc.id for loc in msg.location) + 1, twin.address + 1
    again = msg.sample.add()
    again.CopyFrom(first)
    again.location_id[0] = twin.id
    [window] = window_pprof.decode(msg.SerializeToString(), params_of(sent))
    assert len(window.profile.stacks) == len(sent.profile.stacks)
    assert window.profile.num_samples == sent.profile.num_samples + first.value[0]
