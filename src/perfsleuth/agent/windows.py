"""A rotated perf.data file -> one fleet Window.

perf names a rotated file after the moment it closed it (perf.data.<timestamp>);
the window id is the host and that timestamp, so converting the same file again
(after a crash between spooling the window and deleting the file) gives the same
id, which the collector stores once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..formats import perf_data
from ..model.fleet import Window
from ..symbols import Symbolizer
from .processes import ProcessTable

UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Converted:
    """A window, or why there is none; `lost` counts samples perf itself lost."""

    window: Window | None
    samples: int = 0
    lost: int = 0


def window_id(host: str, path: Path) -> str:
    stamp = path.name.rsplit(".", 1)[-1]
    return f"{UNSAFE.sub('_', host).strip('_.-') or 'host'}-{stamp}"


def convert(
    path: Path,
    *,
    start: float,
    end: float,
    labels: dict[str, str],
    rate_hz: float,
    symbolizer: Symbolizer,
    processes: ProcessTable,
) -> Converted:
    """The window of one rotated file; Converted(None) when it holds no busy CPU.

    Raises UserError when perf left the file unreadable (cut by a crash).
    """
    profile = perf_data.read(path, symbolizer=symbolizer)
    lost = int(profile.meta.get("lost_samples") or 0)
    # pid 0 is the idle task: an idle CPU is not a cost to rank.
    busy = [t.tid for t in profile.threads if t.pid != 0]
    # the timeline (stack and thread ids shared with the filtered copy) dates the samples
    # the Python sampler splices
    profile = replace(profile.filtered(tids=busy), timeline=profile.timeline)
    if not profile.sample_count:
        return Converted(None, lost=lost)
    pids = {t.pid for t in profile.threads}
    window = Window(
        id=window_id(labels["host"], path),
        start=start,
        end=end,
        profile=profile,
        labels=dict(labels),
        processes=processes.describe(pids),
        rate_hz=rate_hz,
    )
    return Converted(window, samples=profile.num_samples, lost=lost)
