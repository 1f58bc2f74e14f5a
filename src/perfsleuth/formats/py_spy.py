"""py-spy's raw output (`py-spy record --format raw`): folded stacks of mixed frames.

One line per distinct stack, root first, `frame;frame;... COUNT`. With `--threads`
the first frame is `thread (TID): NAME`, with `--subprocesses` a `process PID:"CMD"`
frame comes before it. A frame is `NAME (FILE:LINE)` or `NAME (DSO)`:

- a Python frame names its function (qualified, `JSONEncoder.iterencode`) and its
  source file and line (the line running, so the call site in a caller);
- a native frame (`--native`) names a symbol and its DSO, or a C symbol and its
  source line when the DSO has debug info, or `0xADDR (DSO)` when it has no symbol.

A Python frame becomes a Frame with its file and line and the pseudo-DSO
`[python:MODULE]`, MODULE the dotted module name of the file below its sys.path
entry (`json.encoder`, a script's name for a script): everything that groups or
matches by DSO (top --by dso, rules) tells Python code apart by module with no new
field in the model; the flame graph tags Python frames `_[py]` (views/flame.py) and
the folded export writes them back in this file's form (present/folded.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from perfsleuth.errors import UserError
from perfsleuth.formats import limits
from perfsleuth.model.profile import (
    KERNEL_DSO,
    UNKNOWN,
    Frame,
    Profile,
    ProfileBuilder,
    Thread,
)
from perfsleuth.symbols import dso_name

PYTHON_DSO = "[python:{}]"
LINE = re.compile(r"^(?P<stack>\S.*)\s(?P<count>\d+)$")
THREAD = re.compile(r"^thread \((?P<tid>[^)]*)\)(?::\s?(?P<name>.*))?$")
PROCESS = re.compile(r'^process (?P<pid>\d+):".*"$')
# py-spy's thread ids: the OS's (decimal) or pthread's (0x...); the store keeps 63 bits
ID = re.compile(r"0|[1-9]\d{0,18}|0x[0-9a-fA-F]{1,16}")
MAX_ID = 2**63 - 1
# a line number a source file can have (longer digit runs are not a line: a DSO name)
WHERE = re.compile(r"^(?P<file>.*):(?P<line>\d{1,9})$")
# sys.path entries a module path is relative to: the stdlib and package folders
MODULE_ROOTS = re.compile(r"^.*/(?:site-packages|dist-packages|lib/python\d+(?:\.\d+)?t?)/")
PYTHON_SUFFIXES = (".py", ".pyw")


def sniff(head: bytes) -> bool:
    """Folded stacks with at least one `name (file.py:N)` Python frame."""
    text = head.decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines()[:-1] or text.splitlines() if ln.strip()]
    if not lines or not all(LINE.match(ln) for ln in lines):
        return False
    return any(
        is_python_file(where.rsplit(":", 1)[0])
        for ln in lines
        for where in re.findall(r" \(([^()]*:\d+)\)(?:;|\s)", ln)
    )


def is_python_file(file: str) -> bool:
    return file.endswith(PYTHON_SUFFIXES) or file.startswith("<")


def is_library_file(file: str) -> bool:
    """A file of the stdlib (a frozen module's too: `<frozen runpy>`, which a regex
    finding in a package run with -m named as its caller) or of an installed package,
    not the user's own code."""
    return file.startswith("<frozen ") or MODULE_ROOTS.match(file) is not None


def module_of(file: str) -> str:
    """`/usr/lib/python3.11/json/encoder.py` -> `json.encoder`; a script -> its name."""
    if file.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return file.strip("<>").removeprefix("frozen ")
    relative = MODULE_ROOTS.sub("", file) if file.startswith("/") else file
    if relative == file and file.startswith("/"):
        relative = Path(file).name
    parts = relative.removesuffix(".pyw").removesuffix(".py").split("/")
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def parse_frame(text: str) -> Frame:
    name, sep, where = text.rpartition(" (")
    if not sep or not where.endswith(")"):
        return Frame(text)
    where = where[:-1]
    located = WHERE.match(where)
    if located is None:  # native, no source line: NAME (DSO) or 0xADDR (DSO)
        function = UNKNOWN if name.startswith("0x") else name
        if where == KERNEL_DSO:  # python mode keeps the kernel frames perf took
            return Frame(function, dso=KERNEL_DSO, kernel=True)
        return Frame(function, dso=UNKNOWN if where == "?" else dso_name(where))
    file, line = located["file"], int(located["line"])
    if is_python_file(file):
        return Frame(name, dso=PYTHON_DSO.format(module_of(file)), file=file, line=line)
    return Frame(name, file=file, line=line)  # native with debug info: py-spy drops the DSO


def read(path: str | Path, freq: int | None = None) -> Profile:
    """The profile of a raw file, within formats/limits' line, depth and value limits."""
    path = Path(path)
    meta: dict = {"format": "py-spy", "recorder": "py-spy"}
    if freq:
        meta["freq"] = freq
    reader = _Reader(path.name, ProfileBuilder(unit="samples", meta=meta))
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            lines = limits.IOLines(f, path.name)
            for text in lines:
                where = f"{path.name}:{lines.number}"
                if not text.endswith("\n") and LINE.match(text) is None:
                    raise UserError(
                        f"{where}: the file ends in the middle of a line: py-spy's output was"
                        " cut short (a full disk, or py-spy killed while writing); record again"
                    )
                reader.feed(text.rstrip("\n"), where)
    except OSError as e:
        raise UserError(f"{path.name}: cannot read ({e.strerror}); check the file") from e
    profile = reader.builder.build()
    if not profile.num_samples:
        raise UserError(f"{path.name}: no stacks in the file; nothing to import")
    return profile


class _Reader:
    def __init__(self, name: str, builder: ProfileBuilder) -> None:
        self.builder = builder
        self.frames: dict[str, int] = {}
        self.tally = limits.Tally(name)

    def feed(self, text: str, where: str) -> None:
        if not text.strip():
            return
        match = LINE.match(text)
        if match is None:
            raise UserError(
                f"{where}: expected `frame;frame;... count`, got {text[:80]!r};"
                " pass the output of `py-spy record --format raw`"
            )
        names = match["stack"].split(";")
        if len(names) > limits.MAX_DEPTH:
            raise UserError(f"{where}: a stack deeper than {limits.MAX_DEPTH} frames; refused")
        count = int(limits.number(match["count"], where))
        if not count:
            return
        self.tally.add(count, where)
        thread, names = _thread(names, where)
        stack = tuple(self._frame_id(name) for name in reversed(names) if name)
        self.builder.add_ids(
            stack,
            float(count),
            count=count,
            thread_index=self.builder.thread_id(thread),
            state="running",
        )

    def _frame_id(self, name: str) -> int:
        fid = self.frames.get(name)
        if fid is None:
            fid = self.frames[name] = self.builder.frame_id(parse_frame(name))
        return fid


def _thread(names: list[str], where: str) -> tuple[Thread | None, list[str]]:
    """The sample's thread (from --threads and --subprocesses frames) and its real frames."""
    pid = 0
    if names and (process := PROCESS.match(names[0])):
        pid = _id(process["pid"], "process", where)
        names = names[1:]
    if names and (thread := THREAD.match(names[0])):
        return Thread(_id(thread["tid"], "thread", where), pid, thread["name"] or ""), names[1:]
    return None, names


def _id(text: str, what: str, where: str) -> int:
    """A thread or process id as py-spy writes it: decimal, or hexadecimal with 0x."""
    value = int(text, 0) if ID.fullmatch(text) else -1
    if not 0 <= value <= MAX_ID:
        raise UserError(
            f"{where}: {what} id {text[:24]!r} is not a decimal or 0x hex number below 2^63;"
            " the file is corrupt"
        )
    return value
