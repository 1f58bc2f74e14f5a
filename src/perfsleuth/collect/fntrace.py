"""fntrace, cache mode's own Valgrind tool (valgrind_tool/fntrace.c): built on first
use, and its binary records of a function's calls read back.

Why a tool and not lackey: lackey prints every access of the whole program as text
(about 1 µs of its own per access, plus the parsing here), so a program's set-up
cost minutes before the first call of a small function. fntrace records only inside
the function's calls, 16 bytes an access, and costs about what valgrind without a
tool does elsewhere (bench/cache_trace_cost.py). Debian's `valgrind` package ships
the headers and static libraries a tool links against, so it builds in about a
second with the C compiler; where it cannot be built, memtrace falls back to lackey.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import struct
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from ..cpu_cache_projections import spatial_sample
from ..cpu_cache_projections.calibrate import cache_dir
from .traced_calls import CallCounter, DataObserver
from .valgrind import valgrind_binary

SOURCE = Path(__file__).with_name("valgrind_tool") / "fntrace.c"
LIBEXEC = Path("/usr/libexec/valgrind")  # the launcher's own files (VALGRIND_LIB)
STATIC_LIBS = Path("/usr/lib/x86_64-linux-gnu/valgrind")
LINK_LIBS = ("libcoregrind-amd64-linux.a", "libvex-amd64-linux.a", "libgcc-sup-amd64-linux.a")
TOOL = "fntrace"
TOOL_FILE = f"{TOOL}-amd64-linux"
VALGRIND_LOAD_ADDRESS = "0x58000000"  # where valgrind's amd64 tools are linked
CFLAGS = [
    "-O2", "-m64", "-fno-strict-aliasing", "-fno-builtin", "-fno-stack-protector",
    "-fno-pie", "-fomit-frame-pointer", "-I/usr/include/valgrind",
    "-DVGA_amd64=1", "-DVGO_linux=1", "-DVGP_amd64_linux=1", "-DVGPV_amd64_linux_vanilla=1",
]  # fmt: skip
LDFLAGS = [
    "-static", "-nodefaultlibs", "-nostartfiles", "-u", "_start", "-Wl,--build-id=none",
    f"-Wl,-Ttext-segment={VALGRIND_LOAD_ADDRESS}",
]  # fmt: skip
RECORD = struct.Struct("<QII")  # address, size, kind
KINDS = {ord(k): k for k in "ILSM"}
SPATIAL = frozenset(map(ord, "lsm"))  # an access of a call not recorded, in the spatial sample
CALL, RETURN, INSTRUCTION = ord("C"), ord("R"), ord("I")
NUMBER, END = ord("N"), ord("E")  # a sampled call's number; the calls seen, at the end
AUTO = 0  # --sample-every=0: the tool doubles k as the run goes on


@lru_cache(maxsize=1)
def tool_dir() -> str | None:
    """A VALGRIND_LIB folder holding fntrace beside the launcher's files, built once
    per valgrind version and source; None where it cannot be built (then lackey)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    valgrind = shutil.which("valgrind")
    libs = [STATIC_LIBS / name for name in LINK_LIBS]
    if platform.machine() != "x86_64" or not compiler or not valgrind or not LIBEXEC.is_dir():
        return None
    if not all(lib.exists() for lib in libs):
        return None
    version = subprocess.run([valgrind, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(SOURCE.read_bytes() + version.encode()).hexdigest()[:16]
    folder = cache_dir() / f"{TOOL}-{key}"
    if not (folder / TOOL_FILE).exists():
        try:
            build(compiler, libs, folder)
        except (OSError, subprocess.CalledProcessError):
            return None
    return str(folder)


def build(compiler: str, libs: list[Path], folder: Path) -> None:
    """Compile the tool and link the launcher's files beside it, in a temporary
    folder renamed into place (two perfsleuths may build at once)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{TOOL}-", dir=folder.parent))
    for item in LIBEXEC.iterdir():
        (staging / item.name).symlink_to(item)
    argv = [compiler, *CFLAGS, "-o", str(staging / TOOL_FILE), str(SOURCE), *LDFLAGS]
    subprocess.run([*argv, *map(str, libs), "-lgcc"], check=True, capture_output=True)
    try:
        staging.rename(folder)
    except OSError:  # built meanwhile by another run
        shutil.rmtree(staging, ignore_errors=True)


def argv(
    program: str,
    args: list[str],
    entry: int,
    out_fd: int,
    log_file: str,
    max_calls: int,
    sample_every: int = 1,
    detail_calls: int = -1,
) -> list[str]:
    """max_calls: the calls written out as each ends, so the reader can stop the
    program at once (0: written in blocks only); sample_every: 1 in k calls
    recorded (AUTO: k doubles, keeping max_calls to twice that over the run);
    detail_calls: the calls whose every instruction is written (-1: all; past
    them, only each new code line's first, the rest counted in 'R')."""
    return [
        valgrind_binary(),
        f"--tool={TOOL}",
        f"--entry={entry:#x}",
        f"--out-fd={out_fd}",
        f"--max-calls={max_calls}",
        f"--sample-every={sample_every}",
        *([f"--detail-calls={detail_calls}"] if detail_calls >= 0 else []),
        f"--log-file={log_file}",
        "--",
        program,
        *args,
    ]


class RecordCutter(CallCounter):
    """Feeds on fntrace's records, which hold the function's (sampled) calls only."""

    def __init__(
        self, max_calls: int, line_size: int, observer: DataObserver | None, stop_when_full: bool
    ) -> None:
        super().__init__(max_calls, line_size, observer, stop_when_full)
        self.pending = b""
        self.number: int | None = None  # of the next call, when the tool samples

    def feed(self, chunk: bytes) -> bool:
        """True (with stop_when_full) once max_calls calls are complete."""
        data = self.pending + chunk
        cut = len(data) - len(data) % RECORD.size
        self.pending = data[cut:]
        for address, size, kind in RECORD.iter_unpack(data[:cut]):
            if kind == NUMBER:
                self.number = address
            elif kind == CALL:
                self.start_call(self.number, max(size, 1))
            elif kind == END:
                self.recording.total_calls = address
            elif kind == RETURN:
                self.recording.instructions += size  # not written (--detail-calls)
                if self.end_call() and self.stop_when_full:
                    return True
            elif kind == INSTRUCTION:
                self.count_instruction(address, size)
            elif kind in SPATIAL:
                self.recording.spatial.append((address, size))
            else:
                self.count_data(KINDS[kind], address, size)
                self.keep_spatial(address, size)
        return False

    def keep_spatial(self, address: int, size: int) -> None:
        """A recorded call's access, in the spatial sample when sampling and its
        line is in it (the tool samples only the calls it does not record)."""
        every = self.recording.sample_every
        if self.number is not None and spatial_sample.kept(address, size, self.shift, every):
            self.recording.spatial.append((address, size))
