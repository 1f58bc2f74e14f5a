"""The zero-code-change proof for Python's json: the same command with orjson behind `json`.

The candidate side puts a folder first on PYTHONPATH whose sitecustomize.py (run by
CPython at startup, before the program) replaces json.dumps and json.loads with
orjson where orjson gives the same answer: calls with arguments orjson has no
equivalent for (cls=, object_hook=, separators=, ...) and values it refuses
(non-string keys, integers beyond 64 bits) go to the original functions. The
output differs only in whitespace and in non-ASCII characters written as UTF-8
instead of \\u escapes: the same JSON to any parser.

The shim reports that it was loaded in $PERFSLEUTH_SHIM_REPORT; a candidate run that
did not load it (a wrapper that drops PYTHONPATH, `python -S`, `-I`) is not a proof.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..collect.python import INTERPRETER
from ..errors import UserError
from .runner import Side

REPORT_ENV = "PERFSLEUTH_SHIM_REPORT"
SITECUSTOMIZE = '''\
"""perfsleuth's json -> orjson shim (perfsleuth advise --verify); see experiments/python_shim.py."""
import json
import os

import orjson

_dumps, _loads = json.dumps, json.loads
_OPTIONS = {"sort_keys": orjson.OPT_SORT_KEYS}


def dumps(obj, **kwargs):
    option = 0
    for name in list(kwargs):
        if name in _OPTIONS and kwargs[name]:
            option |= _OPTIONS[name]
        elif name == "indent" and kwargs[name] == 2:
            option |= orjson.OPT_INDENT_2
        elif not (name in _OPTIONS or name == "indent" or name == "default"):
            return _dumps(obj, **kwargs)
    try:
        return orjson.dumps(obj, default=kwargs.get("default"), option=option).decode()
    except TypeError:
        return _dumps(obj, **kwargs)


def loads(s, **kwargs):
    if kwargs:
        return _loads(s, **kwargs)
    return orjson.loads(s)


json.dumps, json.loads = dumps, loads
if os.environ.get("PERFSLEUTH_SHIM_REPORT"):
    with open(os.environ["PERFSLEUTH_SHIM_REPORT"], "a") as report:
        report.write(f"orjson {orjson.__version__} pid {os.getpid()}\\n")
'''


def orjson_sides(command: list[str], shim_root: Path, cwd: str | None) -> tuple[list[Side], Path]:
    """Baseline and orjson sides of a Python command, and the file the shim reports to."""
    _check_orjson(command[0], cwd)
    folder = shim_root / "json-orjson"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    report = folder / "loaded.txt"
    report.unlink(missing_ok=True)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, REPORT_ENV: str(report)}
    return [Side("baseline", command, cwd=cwd), Side("orjson", command, env, cwd)], report


def _check_orjson(interpreter: str, cwd: str | None) -> None:
    if not INTERPRETER.match(Path(interpreter).name):
        raise UserError(
            f"the command starts {interpreter}, not python; record it as `python3 SCRIPT ...` "
            "to verify the orjson shim"
        )
    try:
        done = subprocess.run(
            [interpreter, "-c", "import orjson"], capture_output=True, timeout=30, cwd=cwd
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"cannot run {interpreter} to look for orjson: {e}") from e
    if done.returncode != 0:
        raise UserError(
            f"orjson is not installed for {interpreter}; "
            f"`{interpreter} -m pip install orjson`, then verify again"
        )


def check_loaded(report: Path) -> None:
    if not report.exists():
        raise UserError(
            "the command did not load the orjson shim (does it drop PYTHONPATH, or run "
            "python with -S or -I?); measured nothing"
        )
