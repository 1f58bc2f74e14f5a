"""perf.data -> Profile.

Fast path: the perfsleuth_native extension (native/, Rust) streams the file and
returns stacks already aggregated per (stack, thread), with user addresses as
DSO file offsets; every unique (DSO, address) is then symbolized once through
perfsleuth.symbols. Fallback (extension not built, or a `--call-graph dwarf`
recording it could not unwind): `perf script`, parsed by formats.perf_script.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import threading
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ..binaries import ElfInfo, elf_info, find_dso
from ..errors import UserError
from ..model.leaf_costs import LeafCosts
from ..model.profile import Frame, Profile, ProfileBuilder, Thread
from ..model.timeline import COLUMNS as TIMELINE_COLUMNS
from ..model.timeline import Timeline
from ..symbols import KERNEL_DSO, UNKNOWN, Symbolizer, dso_name
from ..symbols.function_starts import unnamed_frame

MAGICS = (b"PERFILE2", b"2ELIFREP")

try:  # the extension is optional: `make native` builds it
    import perfsleuth_native as _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None


def sniff(head: bytes) -> bool:
    """True for a perf.data file (file or pipe mode)."""
    return head[:8] in MAGICS


def native_available() -> bool:
    return _native is not None


def _check_file(p: Path) -> None:
    try:
        size = p.stat().st_size
        with open(p, "rb") as f:
            head = f.read(16)
    except FileNotFoundError as e:
        raise UserError(f"{p}: no such perf.data file; check the path") from e
    except OSError as e:
        raise UserError(f"{p}: cannot read perf.data ({e.strerror}); check permissions") from e
    if size == 0:
        raise UserError(f"{p}: empty perf.data; the recording failed or was cut off, re-record it")
    if not sniff(head):
        raise UserError(f"{p}: not a perf.data file (no PERFILE2 magic); give a perf.data file")
    if len(head) >= 16 and int.from_bytes(head[8:16], "little") == 16:
        raise UserError(
            f"{p}: pipe-mode perf.data (from `perf record -o -`); "
            "record to a file (perf record -o FILE) or convert it with `perf inject -o FILE`"
        )
    if size < HEADER_SIZE:
        raise UserError(f"{p}: truncated perf.data ({size} bytes, no full header); re-record it")
    declared = _declared_end(p)
    if declared > size:
        raise UserError(
            f"{p}: truncated perf.data (its header says it runs to byte {declared:,}, the file "
            f"has {size:,}); re-record it"
        )


HEADER_SIZE = 104


def _declared_end(p: Path) -> int:
    """Where the header says the file ends: the data section, then the table of
    feature sections after it and the sections it points to. perf script reads
    a file cut at a record boundary without a word, so the check is ours."""
    with open(p, "rb") as f:
        header = f.read(HEADER_SIZE)
        data_offset, data_size = struct.unpack_from("<QQ", header, 40)
        end = data_offset + data_size
        features = sum(bin(byte).count("1") for byte in header[72:HEADER_SIZE])
        if end >= os.fstat(f.fileno()).st_size:
            return end + 16 * features
        f.seek(end)
        table = f.read(16 * features)
    if len(table) < 16 * features:
        return end + 16 * features
    sections = struct.iter_unpack("<QQ", table)
    return max([end + 16 * features, *(offset + length for offset, length in sections)])


def read(
    path: str | os.PathLike[str],
    *,
    symbolizer: Symbolizer | None = None,
    use_native: bool | None = None,
) -> Profile:
    """Read a perf.data file into a Profile.

    meta carries the header metadata (hostname, osrelease, arch, cpudesc,
    nrcpus_online, cmdline, perf_version, events, event, build_ids,
    lost_samples, num_samples), `dsos` ([{path, build_id}]) and `reader`
    ("native" or "perf script").
    """
    p = Path(path)
    _check_file(p)
    if use_native is None:
        use_native = _native is not None
    if use_native and _native is not None:
        try:
            data = _native.read_perf_data(str(p), packed_timeline=True)
        except ValueError as e:
            raise UserError(f"{p}: {e}; re-record it") from e
        except OSError as e:
            raise UserError(f"{p}: {e}; check the path and permissions") from e
        meta = data["meta"]
        dwarf = any(ev["dwarf"] for ev in data["events"])
        if not (
            dwarf and meta.get("samples_needing_dwarf") and not meta.get("samples_dwarf_unwound")
        ):
            return _from_native(p, data, symbolizer or Symbolizer())
    return _via_perf_script(p, symbolizer)


def _from_native(p: Path, data: dict[str, Any], sym: Symbolizer) -> Profile:
    """The profile of the event with the most samples in the native reader's output.

    The shape is documented on read_perf_data in native/src/lib.rs: events, dsos
    and threads are lists of dicts; frames and rows are dicts of columns.
    """
    reading = _NativeReading(data)
    if not reading.rows["stack"]:
        raise UserError(
            f"{p}: no samples in this perf.data; the program ran too briefly, re-record"
        )
    chains = reading.symbolize(sym)
    builder = ProfileBuilder(unit=reading.event["unit"], meta=reading.meta(p))
    placed = reading.add_samples(builder, chains)
    profile = builder.build()
    profile.dsos = reading.sampled_dsos()
    profile.timeline = reading.timeline(placed) or None
    profile.leaf_costs = reading.leaf_costs(chains) or None
    return profile


class _NativeReading:
    """The native reader's output, narrowed to its busiest event."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.rows = data["rows"]
        self.dsos = data["dsos"]
        self.frames = data["frames"]
        self.files: dict[tuple[str, str], DsoFile] = {}
        self.per_event: dict[int, int] = {}
        self._frame_samples: dict[int, int] | None = None
        for ev, count in zip(self.rows["event"], self.rows["count"], strict=True):
            self.per_event[ev] = self.per_event.get(ev, 0) + count
        self.event_index = (
            max(self.per_event, key=lambda e: self.per_event[e]) if self.per_event else 0
        )
        assert _native is not None  # the reading comes from the native reader
        rows = self.rows
        # this event's rows and stacks, mapped natively (native/src/event_rows.rs)
        self.event_rows = _native.EventRows(
            data["stacks"],
            rows["stack"],
            rows["thread"],
            rows["event"],
            rows["period"],
            rows["count"],
            self.event_index,
        )

    @property
    def event(self) -> dict[str, Any]:
        return self.data["events"][self.event_index]

    def sampled_dsos(self) -> list[dict[str, str]]:
        """The DSOs this event's sampled stacks are in. A recording of every CPU (`-a`,
        limited to the command's cgroup) maps every process of the host: another venv's
        python3.11 and perfsleuth_native were listed as the run's, where a lookup by file
        name could take them for the program's own."""
        f_dso = self.frames["dso"]
        used = {f_dso[fid] for fid in self.frame_samples()}
        return [
            {"path": d["path"], "build_id": d["build_id"]}
            for index, d in enumerate(self.dsos)
            if index in used
        ]

    def frame_samples(self) -> dict[int, int]:
        """The frames of the stacks this event's samples have, each with how many
        samples hold it (counted once: symbolize and sampled_dsos both ask)."""
        if self._frame_samples is None:
            self._frame_samples = dict(zip(*self.event_rows.frame_samples(), strict=True))
        return self._frame_samples

    def symbolizable(self, dso: int) -> bool:
        # files on disk, and [vdso] when perf saved it in its build-id cache
        path, bid = self.dsos[dso]["path"], self.dsos[dso]["build_id"]
        return not path.startswith("[") or (path.startswith("[vdso") and bool(bid))

    def symbolize(self, sym: Symbolizer) -> dict[int, tuple[Frame, ...]]:
        """frame index -> its frames (inlined first), each used frame symbolized once.

        The addresses go to the symbolizer the most sampled first: one that names only
        some of them (the agent near its CPU budget) names those that matter most."""
        used = self.frame_samples()
        f_dso, f_addr, f_kernel = self.frames["dso"], self.frames["address"], self.frames["kernel"]
        offsets: dict[tuple[str, str, int], int] = {}
        for fid, samples in used.items():
            dso = f_dso[fid]
            if dso >= 0 and not f_kernel[fid] and self.symbolizable(dso):
                key = (self.dsos[dso]["path"], self.dsos[dso]["build_id"], f_addr[fid])
                offsets[key] = max(offsets.get(key, 0), samples)
        kernel = self._kernel_frames_meanwhile(sym, {f_addr[f] for f in used if f_kernel[f]})
        answers = sym.symbolize_offsets(sorted(offsets, key=lambda k: (-offsets[k], k)))
        kernel_frames = kernel()
        return {fid: self._chain(fid, answers, kernel_frames) for fid in used}

    def _kernel_frames_meanwhile(
        self, sym: Symbolizer, addresses: set[int]
    ) -> Callable[[], dict[int, Frame]]:
        """Kernel frames looked up in a thread while llvm-symbolizer runs; the
        returned function waits for them."""
        kernel: dict[int, Frame] = {}
        if not addresses:
            return lambda: kernel
        meta = self.data["meta"]
        build_id = next((d["build_id"] for d in self.dsos if d["path"] == KERNEL_DSO), "")

        def look_up() -> None:
            kernel.update(
                sym.kernel_frames(
                    addresses,
                    build_id=build_id,
                    release=meta.get("osrelease", ""),
                    text_addr=meta.get("kernel_text"),
                )
            )

        worker = threading.Thread(target=look_up, daemon=True)
        worker.start()

        def wait() -> dict[int, Frame]:
            worker.join()
            return kernel

        return wait

    def _chain(self, fid: int, answers: dict, kernel: dict[int, Frame]) -> tuple[Frame, ...]:
        dso, addr = self.frames["dso"][fid], self.frames["address"][fid]
        if self.frames["kernel"][fid]:
            return (kernel[addr],)
        if dso < 0:
            return (Frame(UNKNOWN, dso=UNKNOWN),)
        path, bid = self.dsos[dso]["path"], self.dsos[dso]["build_id"]
        if not self.symbolizable(dso):
            return (Frame(UNKNOWN, dso=path),)
        chain = answers.get((path, addr), ())
        if len(chain) <= 1 and (not chain or chain[0].function == UNKNOWN):
            if (path, bid) not in self.files:  # its file looked up once per reading
                self.files[(path, bid)] = _dso_file(path, bid)
            return (_unknown_frame(path, self.files[(path, bid)], addr),)
        return tuple(chain)

    def meta(self, p: Path) -> dict[str, Any]:
        event = self.event
        has_cc, dwarf = event["has_callchain"], event["dwarf"]
        meta = dict(self.data["meta"])
        meta["build_ids"] = [{"path": a, "build_id": b} for a, b in meta.get("build_ids", [])]
        meta.update(
            {
                "source": "perf.data",
                "path": str(p),
                "reader": "native",
                "event": event["name"],
                # software, hardware, hw-cache, tracepoint, breakpoint, pmu
                "event_kind": event["kind"],
                "call_graph": "dwarf" if dwarf else ("fp" if has_cc else "none"),
                "events": [e["name"] for e in self.data["events"]],
                "num_samples": self.per_event[self.event_index],
            }
        )
        if len(self.per_event) > 1:
            from . import perf_script  # its warning; the native path reads no perf script

            names = [e["name"] for e in self.data["events"]]
            counts = {names[e]: n for e, n in self.per_event.items()}
            warning = perf_script.other_events_warning(str(p), counts, event["name"])
            meta.setdefault("warnings", []).append(warning)
        return meta

    def add_samples(
        self, builder: ProfileBuilder, chains: dict[int, tuple[Frame, ...]]
    ) -> tuple[list[int], list[int]]:
        """Adds this event's rows; returns per native row its stack id and its thread
        index in the profile (-1 and -1 for another event's row)."""
        interned = {fid: [builder.frame_id(f) for f in chain] for fid, chain in chains.items()}
        threads = [
            builder.thread_id(Thread(t["tid"], t["pid"], t["comm"])) for t in self.data["threads"]
        ]
        count_weights = self.event["unit"] == "samples"
        stacks, row_stack, row_thread, sums = self.event_rows.expand(
            interned, threads, count_weights
        )
        ids = [builder.stack_id(stack) for stack in stacks]
        for stack, thread, weight, count in zip(*sums, strict=True):
            builder.add_to_stack(ids[stack], weight, count=count, thread_index=thread)
        return [-1 if stack < 0 else ids[stack] for stack in row_stack], row_thread

    def leaf_costs(self, chains: dict[int, tuple[Frame, ...]]) -> LeafCosts:
        """This event's weight per leaf instruction of a file on disk (the binary's
        virtual address, as perf annotate shows it), for the machine-code view."""
        leaves = self.event_rows.leaf_weights(self.event["unit"] == "samples")
        weights: dict[tuple[str, int, str], float] = {}
        elves: dict[int, ElfInfo | None] = {}
        for fid, weight in zip(*leaves, strict=True):
            where = self._leaf_address(fid, elves)
            if where is not None and chains[fid]:
                key = (*where, chains[fid][0].function)
                weights[key] = weights.get(key, 0.0) + weight
        return LeafCosts.build(weights)

    def _leaf_address(self, fid: int, elves: dict[int, ElfInfo | None]) -> tuple[str, int] | None:
        """(object file, binary vaddr) of a user-space frame; ELVES caches per object."""
        dso, offset = self.frames["dso"][fid], self.frames["address"][fid]
        if dso < 0 or self.frames["kernel"][fid] or not self.symbolizable(dso):
            return None
        if dso not in elves:
            real = find_dso(self.dsos[dso]["path"], self.dsos[dso]["build_id"])
            elves[dso] = elf_info(real) if real else None
        info = elves[dso]
        vaddr = info.offset_to_vaddr(offset) if info else None
        return None if vaddr is None else (dso_name(self.dsos[dso]["path"]), vaddr)

    def timeline(self, placed: tuple[list[int], list[int]]) -> Timeline:
        """This event's samples in time order (empty when perf recorded no times): the
        reader's runs of rows joined onto the profile's stacks and threads natively
        (native/src/timeline.rs; a Python loop over 250,000 runs was a twentieth of
        `import`)."""
        runs = self.data.get("timeline") or {}
        if not runs.get("row"):
            return Timeline()
        stack_of_row, thread_of_row = placed
        assert _native is not None  # the timeline comes from the native reader
        joined = _native.join_runs(
            runs["row"], runs["count"], runs["time"], stack_of_row, thread_of_row
        )
        columns = {}
        for (name, typecode), data in zip(TIMELINE_COLUMNS, joined, strict=True):
            columns[name] = array(typecode)
            columns[name].frombytes(data)
        return Timeline(**columns)


class DsoFile(NamedTuple):
    """The file a recorded DSO is read from now (None: none), its layout and build-id."""

    real: str | None
    info: ElfInfo | None
    build_id: str


def _dso_file(path: str, build_id: str) -> DsoFile:
    real = find_dso(path, build_id)
    info = elf_info(real) if real else None
    return DsoFile(real, info, build_id or (info.build_id if info else ""))


def _unknown_frame(path: str, file: DsoFile, offset: int) -> Frame:
    """A frame without a symbol (function_starts.unnamed_frame), from a sample's file
    offset; `file` is _dso_file's answer for the DSO."""
    real, info, build_id = file
    vaddr = info.offset_to_vaddr(offset) if info else None
    return unnamed_frame(real, dso_name(path), vaddr, build_id)


def _via_perf_script(p: Path, symbolizer: Symbolizer | None) -> Profile:
    from . import perf_script  # only this path parses perf script's text

    perf = shutil.which("perf")
    if perf is None:
        raise UserError(
            "reading perf.data needs the perfsleuth_native extension (make native) "
            "or Linux perf (apt-get install linux-perf)"
        )
    cmd = [
        perf,
        "script",
        "-i",
        str(p),
        "-F",
        "comm,pid,tid,time,period,event,ip,sym,symoff,dso",
        "--no-inline",
    ]
    with tempfile.TemporaryFile(mode="w+", errors="replace") as errf:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=errf, text=True, errors="replace"
        )
        assert proc.stdout is not None
        try:
            profile = perf_script.build(proc.stdout, str(p), symbolizer=symbolizer)
        except UserError:
            proc.kill()
            proc.wait()
            errf.seek(0)
            err = errf.read().strip().splitlines()
            detail = err[-1] if err else "no samples"
            raise UserError(
                f"{p}: perf script could not read this perf.data ({detail}); re-record it"
            ) from None
        finally:
            proc.stdout.close()
        proc.wait()
    profile.meta.update(_header_from_perf(perf, p))
    profile.meta.update({"source": "perf.data", "path": str(p), "reader": "perf script"})
    profile.dsos = profile.dsos or _dsos_from_perf(perf, p)
    return profile


_HEADER_KEYS = {
    "hostname": "hostname",
    "os release": "osrelease",
    "arch": "arch",
    "cpudesc": "cpudesc",
    "perf version": "perf_version",
    "nrcpus online": "nrcpus_online",
    "nrcpus avail": "nrcpus_avail",
    "cmdline": "cmdline",
}


def _header_from_perf(perf: str, p: Path) -> dict[str, Any]:
    """Header metadata from `perf report --header-only` (fallback path)."""
    try:
        out = subprocess.run(
            [perf, "report", "-i", str(p), "--header-only"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    except OSError:
        return {}
    meta: dict[str, Any] = {}
    for line in out.splitlines():
        key, sep, value = line.lstrip("# ").partition(" : ")
        name = _HEADER_KEYS.get(key.strip())
        if not sep or name is None or name in meta:
            continue
        value = value.strip()
        if name.startswith("nrcpus"):
            meta[name] = int(value) if value.isdigit() else value
        elif name == "cmdline":
            meta[name] = value.split()
        else:
            meta[name] = value
    return meta


def _dsos_from_perf(perf: str, p: Path) -> list[dict]:
    try:
        out = subprocess.run(
            [perf, "buildid-list", "-i", str(p)], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return []
    dsos = []
    for line in out.splitlines():
        bid, _, path = line.strip().partition(" ")
        if path:
            dsos.append({"path": path, "build_id": bid})
    return dsos
