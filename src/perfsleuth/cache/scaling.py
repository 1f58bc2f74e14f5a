"""Footprint against workload size: `--scale 'n=1000,10000,100000'` runs the
command once per n, fits the distinct data lines the function touches over the
whole run as a + b*n (least squares), and predicts the n at which the working set
exceeds each cache level. The model's misses per call are reported per n.

The working set the caches must hold is larger than the lines the code touches
when the prefetcher brings in lines nobody uses (the cold line next to a hot
one): with the model's prefetcher on, the cliffs come from the fit of the
distinct lines the model brought in (`cached_lines`), demand and prefetch.

Address translation has a cliff of its own: past the TLB's reach (measured by
calibrate.py) every access to a new page pays a page walk. The distinct 4 KiB
pages the function touches are fitted the same way, and give the n at which
they exceed that reach."""

from __future__ import annotations

import re
from typing import Any

from ..errors import UserError
from .model import Geometry

PLACEHOLDER = "{n}"


def parse_scale(spec: str) -> list[int]:
    match = re.fullmatch(r"\s*n\s*=\s*([\d_,\s]+)", spec)
    values = [int(v) for v in re.split(r"[,\s]+", match[1].strip())] if match else []
    if len(values) < 2 or any(v <= 0 for v in values):
        raise UserError(
            f"--scale {spec!r}: give two or more positive sizes, like 'n=1000,10000,100000'"
        )
    return sorted(set(values))


def substitute(cmd: list[str], n: int) -> list[str]:
    return [arg.replace(PLACEHOLDER, str(n)) for arg in cmd]


def check_placeholder(cmd: list[str]) -> None:
    if not any(PLACEHOLDER in arg for arg in cmd):
        raise UserError("--scale needs {n} in the command where the size goes, e.g. -- ./prog {n}")


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of the least-squares line y = a + b*x."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    var = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else 0.0
    return mean_y - slope * mean_x, slope


def project(
    runs: list[dict[str, Any]], geometry: Geometry, tlb: dict[str, Any] | None = None
) -> dict[str, Any]:
    """runs: [{"n", "data_lines", "data_pages", "cached_lines", "calls", "misses":
    {level: count}}], sizes ascending; tlb: {"reach_pages", ...} of a calibration,
    or {"reason"} when there is none."""
    touched = fit([(r["n"], r["data_lines"]) for r in runs])
    key = "cached_lines" if geometry.prefetch else "data_lines"
    intercept, slope = fit([(r["n"], r[key]) for r in runs])
    low, high = runs[0]["n"], runs[-1]["n"]
    cliffs = []
    for level in geometry.levels:
        capacity = level.lines(geometry.line_size)
        n = (capacity - intercept) / slope if slope > 0 else None
        cliffs.append(
            {
                "level": level.name,
                "capacity_lines": capacity,
                "n": round(n) if n is not None and n > 0 else None,
                "in_range": n is not None and low <= n <= high,
            }
        )
    return {
        "runs": [
            {**r, "misses_per_call": {k: v / max(r["calls"], 1) for k, v in r["misses"].items()}}
            for r in runs
        ],
        "fit": {
            "of": key,
            "touched_lines_per_n": touched[1],
            "intercept_lines": intercept,
            "lines_per_n": slope,
            "bytes_per_n": slope * geometry.line_size,
        },
        "range": [low, high],
        "cliffs": cliffs,
        "tlb": tlb_cliff(runs, tlb or {"reason": "not measured"}),
        "geometry": geometry.to_json(),
    }


def tlb_cliff(runs: list[dict[str, Any]], tlb: dict[str, Any]) -> dict[str, Any]:
    reach = tlb.get("reach_pages")
    if not reach:
        return {"available": False, "reason": tlb.get("reason", "no TLB knee measured")}
    intercept, slope = fit([(r["n"], r["data_pages"]) for r in runs])
    n = (reach - intercept) / slope if slope > 0 else None
    return {
        **tlb,
        "available": True,
        "intercept_pages": intercept,
        "pages_per_n": slope,
        "n": round(n) if n is not None and n > 0 else None,
        "in_range": n is not None and runs[0]["n"] <= n <= runs[-1]["n"],
    }
