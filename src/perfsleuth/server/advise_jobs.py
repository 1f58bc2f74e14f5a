"""`perfsleuth advise` started from the page (POST /api/runs/N/advise): one run at a time
in a background thread, its state asked for with GET until the findings are stored.

The advisor stores the findings in the store like the command does, so the findings
page reads them as it reads the command's; a failure is kept as its one-line error.
"""

from __future__ import annotations

import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..store.runs import Store


@dataclass
class JobState:
    state: str  # "idle" (never started here), "running", "done" or "failed"
    error: str = ""

    def to_json(self) -> dict[str, str]:
        return {"state": self.state, "error": self.error}


class AdviseJobs:
    def __init__(self, store: Store, roots: list[Path]) -> None:
        self.store = store
        self.roots = roots
        self._states: dict[int, JobState] = {}
        self._lock = threading.Lock()

    def state(self, run_id: int) -> JobState:
        with self._lock:
            return self._states.get(run_id, JobState("idle"))

    def start(self, run_id: int) -> JobState:
        """Start advising the run unless some run is being advised (the machine's cores
        are the analyzers'); the state after the request."""
        with self._lock:
            busy = [r for r, s in self._states.items() if s.state == "running"]
            if busy:
                if busy[0] != run_id:
                    raise UserError(f"run {busy[0]} is being advised: wait until it is done")
                return self._states[run_id]
            self._states[run_id] = JobState("running")
        threading.Thread(target=self._advise, args=(run_id,), daemon=True).start()
        return JobState("running")

    def _advise(self, run_id: int) -> None:
        # the advisor imports every analyzer (capstone, libclang...): only when asked to advise
        from ..advisor import AdviseOptions, advise

        try:
            advise(self.store, run_id, AdviseOptions(src=[str(r) for r in self.roots]))
            done = JobState("done")
        except UserError as e:
            done = JobState("failed", str(e))
        except Exception as e:  # a bug: shown as one line, the traceback on serve's stderr
            traceback.print_exc(file=sys.stderr)
            done = JobState("failed", f"internal error ({type(e).__name__}): {e}")
        with self._lock:
            self._states[run_id] = done
