"""A run's whole-run answers, the ones the web UI asks for first (facts, flame graph,
TopN by function, time order), as the bytes the API sends them.

`serve` keeps them in the store's answers/ folder (store/answers.py) the first time a
page asks; `record` keeps them as soon as the run is stored (`keep`), so the first
`serve` to show the run reads files (~1 s for 100k stacks) instead of loading and
folding the run (~2.2 s quiet, 4-7 s under load). Both compute them here, so the
bytes are the same whichever kept them.
"""

from __future__ import annotations

import json
from typing import Any

from ..model.counts import ExactCounts
from ..model.profile import Profile
from ..store.answers import AnswerFiles
from ..store.runs import Store
from . import flame, timeline, top

FACTS = "facts"
FLAME = "flame"
TIME_ORDER = "timeline"


def encode_json(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, default=str).encode()


def top_name(by: str) -> str:
    return f"top-{by}"


def facts(profile: Profile) -> bytes:
    """The run's threads and states: the flame page needs no profile for them."""
    threads = [{"tid": t.tid, "pid": t.pid, "name": t.name} for t in profile.threads]
    states = sorted({s for s in profile.sample_state if s})
    return json.dumps({"threads": threads, "states": states}).encode()


def top_answer(run_id: int, profile: Profile, by: str, exact: ExactCounts | None = None) -> bytes:
    """The TopN of the whole run: a count run's from its exact counts, as `perfsleuth top`."""
    found = top.exact_top(exact, by=by, n=0) if exact is not None else top.top(profile, by=by, n=0)
    return encode_json({"run": str(run_id), **found})


def keep(store: Store, run_id: int, profile: Profile | None = None) -> None:
    """Compute and keep a just-stored run's whole-run answers; `profile` is the one just
    stored, when the caller has it (reading a large run back costs more than the pages)."""
    info = store.run_info(run_id)
    profile = profile if profile is not None else store.load(run_id)
    files = AnswerFiles(store.root)
    columns = flame.flame_columns(profile, processes=True)
    files.get(info, FACTS, lambda: facts(profile))
    files.get(info, FLAME, lambda: flame.encode(columns))
    exact = store.load_run(run_id).exact() if info.unit == "instructions" else None
    files.get(info, top_name("function"), lambda: top_answer(run_id, profile, "function", exact))
    kept = profile.timeline
    if kept is not None:
        files.get(info, TIME_ORDER, lambda: timeline.encode(profile, columns, kept, set()))
