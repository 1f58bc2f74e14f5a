"""Text for people: aligned tables through rich, coloured only on a terminal.

RENDERERS names, for each document kind, the `<document>_text` module and function that
render it; the kinds are also every document the json output writes. A renderer is
imported only to write: each command's --format choices come from this registry, and
loading every renderer (and what they import) would slow every command's start.
"""

from __future__ import annotations

from importlib import import_module

from . import FINDINGS, Output
from .output import console_for

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from typing import IO, Any

    from . import Writer

# A renderer by this name takes the open file, not a rich console: its text is mostly
# plain lines, and importing rich would cost more than writing them (diff_text.py).
FILE_RENDERER = "write"
RENDERERS = {
    FINDINGS: ("findings_text", "render"),
    "run": ("findings_text", "render_run"),
    "top": ("top_text", "write"),
    "callers": ("callgraph_text", "render_callers"),
    "callees": ("callgraph_text", "render_callees"),
    "annotate": ("annotate_text", "write"),
    "diff": ("diff_text", "write"),
    "cache": ("cpu_cache_text", "render"),
    "calibration": ("cpu_cache_text", "render_calibration"),
    "runs": ("runs_text", "render"),
    "threads": ("threads_text", "render"),
    "compare": ("experiments_text", "render_compare"),
    "try": ("experiments_text", "render_try"),
    "gate": ("gate_text", "render"),
    "fleet-top": ("fleet_text", "render_top"),
    "fleet-status": ("fleet_text", "render_status"),
    "fleet-diff": ("fleet_advice_text", "render_diff"),
    "fleet-series": ("fleet_advice_text", "render_series"),
    "fleet-advice": ("fleet_advice_text", "render_advice"),
    "fleet-libraries": ("fleet_advice_text", "render_libraries"),
}


def _writer(module: str, function: str) -> Writer:
    def write(doc: Any, fh: IO[Any]) -> None:
        render = getattr(import_module(f"{__package__}.{module}"), function)
        if function == FILE_RENDERER:
            render(doc, fh)
        else:
            render(doc, console_for(fh))

    return write


OUTPUT = Output(
    name="text",
    help="for people: aligned tables, coloured only on a terminal",
    writers={kind: _writer(*where) for kind, where in RENDERERS.items()},
)
