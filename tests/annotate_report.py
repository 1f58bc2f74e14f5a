"""callgrind_annotate's function table, for tests comparing counts with it."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

ANNOTATE_ROW = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?):(.*?)(?: \[.*\])?$")


def callgrind_annotate(out_file: Path) -> str:
    """`callgrind_annotate --inclusive=no --threshold=100` of a callgrind file."""
    return subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def file_function_rows(report: str) -> dict[tuple[str, str], int]:
    """Its self count per (file name, function) row (a file name two rows share: summed)."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("file:function")) + 2
    rows: dict[tuple[str, str], int] = defaultdict(int)
    for line in lines[start:]:
        match = ANNOTATE_ROW.match(line)
        if match is None:
            break
        rows[Path(match.group(2)).name, match.group(3)] += int(match.group(1).replace(",", ""))
    return dict(rows)
