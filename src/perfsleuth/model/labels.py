"""The labels every stored sample of the fleet carries, and how a query names them: apart
from model/fleet.py (which names them too) so that views/keys.py's groupings, which
every `top` and `diff` takes for --by, come without the fleet's model."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    import re

# Every stored sample carries these labels ("" when the source does not say).
LABELS = ("host", "service", "pid", "comm", "exe", "build_id", "cgroup")
LABEL_GROUPINGS = ("service", "host")  # the labels a fleet query can group by by name
LABEL_PREFIX = "label:"  # and any label as label:NAME (fleet top --by label:version)
LABEL_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_.-]*"  # what --where and --by may name


def __getattr__(name: str) -> re.Pattern[str]:
    """LABEL_NAME, LABEL_NAME_PATTERN compiled, made when first asked for: `top` and `diff`
    take --by's choices from here and import no re (with the enum it imports, a tenth of
    a count view's imports: docs/counts.md)."""
    if name != "LABEL_NAME":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import re

    compiled = globals()["LABEL_NAME"] = re.compile(LABEL_NAME_PATTERN)
    return compiled
