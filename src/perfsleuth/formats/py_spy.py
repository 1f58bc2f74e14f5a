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
matches by DSO (top --by dso, rules, colours) tells Python code apart by module
with no new field in the model.
"""

from __future__ import annotations

import re
from pathlib import Path

from perfsleuth.errors import UserError
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread
from perfsleuth.symbols import dso_name

PYTHON_DSO = "[python:{}]"
PYTHON_DSO_PREFIX = "[python:"
UNKNOWN = "[unknown]"
LINE = re.compile(r"^(?P<stack>\S.*)\s(?P<count>\d+)$")
THREAD = re.compile(r"^thread \((?P<tid>\w+)\)(?::\s?(?P<name>.*))?$")
PROCESS = re.compile(r'^process (?P<pid>\d+):".*"$')
WHERE = re.compile(r"^(?P<file>.*):(?P<line>\d+)$")
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


def is_python_frame(frame: Frame) -> bool:
    return frame.dso.startswith(PYTHON_DSO_PREFIX)


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
        return Frame(function, dso=UNKNOWN if where == "?" else dso_name(where))
    file, line = located["file"], int(located["line"])
    if is_python_file(file):
        return Frame(name, dso=PYTHON_DSO.format(module_of(file)), file=file, line=line)
    return Frame(name, file=file, line=line)  # native with debug info: py-spy drops the DSO


def read(path: str | Path, freq: int | None = None) -> Profile:
    path = Path(path)
    meta: dict = {"format": "py-spy", "recorder": "py-spy"}
    if freq:
        meta["freq"] = freq
    builder = ProfileBuilder(unit="samples", meta=meta)
    frames: dict[str, int] = {}
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, text in enumerate(f, 1):
            text = text.rstrip("\n")
            if not text.strip():
                continue
            match = LINE.match(text)
            if match is None:
                raise UserError(
                    f"{path.name}:{number}: expected `frame;frame;... count`, got {text[:80]!r};"
                    " pass the output of `py-spy record --format raw`"
                )
            names = match["stack"].split(";")
            thread, names = _thread(names)
            stack = tuple(_frame_id(builder, frames, name) for name in reversed(names) if name)
            count = int(match["count"])
            builder.add_ids(
                stack,
                float(count),
                count=count,
                thread_index=builder.thread_id(thread),
                state="running",
            )
    return builder.build()


def _thread(names: list[str]) -> tuple[Thread | None, list[str]]:
    """The sample's thread (from --threads and --subprocesses frames) and its real frames."""
    pid = 0
    if names and (process := PROCESS.match(names[0])):
        pid = int(process["pid"])
        names = names[1:]
    if names and (thread := THREAD.match(names[0])):
        return Thread(int(thread["tid"], 0), pid, thread["name"] or ""), names[1:]
    return None, names


def _frame_id(builder: ProfileBuilder, frames: dict[str, int], name: str) -> int:
    fid = frames.get(name)
    if fid is None:
        fid = frames[name] = builder.frame_id(parse_frame(name))
    return fid
