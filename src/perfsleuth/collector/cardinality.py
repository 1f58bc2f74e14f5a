"""Label cardinality across pushes: the values each label name has taken, bounded.

A push is checked on its own (formats/wire/ingest: at most 32 labels, short values), but a
client that sends a new value every time (a request id, a timestamp) would make each
window a new series and every fleet query slower, one push at a time. The collector
keeps the values it has accepted per label name and refuses a push that would take a
name past `max_values`, or the names past `max_names`; values seen before always pass,
so the agents already reporting keep working. It starts from the values the store
already holds (`seed`), so a restart does not reopen the limit. `host` is not limited:
one value per machine is the fleet's size, not a mistake.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..formats.wire.ingest import PayloadError

DEFAULT_MAX_VALUES = 10_000
DEFAULT_MAX_NAMES = 256
UNLIMITED = ("host",)


class Cardinality:
    """The label values accepted so far; thread-safe (pushes are admitted from workers)."""

    def __init__(
        self, max_values: int = DEFAULT_MAX_VALUES, max_names: int = DEFAULT_MAX_NAMES
    ) -> None:
        self.max_values = max_values
        self.max_names = max_names
        self.values: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def seed(self, values: Mapping[str, set[str]]) -> None:
        """Count `values` (label name -> values already stored) as accepted."""
        with self._lock:
            for name, seen in values.items():
                if name not in UNLIMITED:
                    self.values.setdefault(name, set()).update(seen)

    def admit(self, labels: Mapping[str, str]) -> None:
        """Accept the labels of one push, or raise PayloadError and remember nothing."""
        limited = {k: v for k, v in labels.items() if k not in UNLIMITED}
        with self._lock:
            new_names = [k for k in limited if k not in self.values]
            if len(self.values) + len(new_names) > self.max_names:
                raise PayloadError(
                    f"label {new_names[0]!r} would be label name {len(self.values) + 1} this "
                    f"collector has seen; at most {self.max_names} (--max-label-names): send "
                    "fewer distinct label names"
                )
            for name, value in limited.items():
                seen = self.values.get(name, set())
                if value not in seen and len(seen) >= self.max_values:
                    raise PayloadError(
                        f"label {name!r} already has {len(seen)} distinct values, the "
                        f"collector's limit (--max-label-values): a label with a value per "
                        f"request or per run makes every window a new series; drop it or "
                        f"bucket its values"
                    )
            for name, value in limited.items():
                self.values.setdefault(name, set()).add(value)
