"""A store holding one cache run with the given projection documents, for the
cache analyzers' tests."""

from pathlib import Path

from perfsleuth.analyzers import Context
from perfsleuth.model.cpu_cache import CacheProjections
from perfsleuth.model.profile import Frame, ProfileBuilder
from perfsleuth.model.run import Recording, RunInfo, StoredDocument
from perfsleuth.store.runs import Store


def stored(function: str, sections: dict) -> dict:
    """A version 1 document (no version) with the given sections; the ones the
    analyzers do not read are empty."""
    none = {"available": False, "reason": "not laid out in this test"}
    return {
        "function": function,
        "executable": "conntable",
        "footprint": {},
        "layout": none,
        "model": {},
        **sections,
    }


def context_with(tmp_path: Path, documents: dict[str, dict]) -> Context:
    builder = ProfileBuilder(unit="samples")
    builder.add([Frame("handle_packet", dso="conntable"), Frame("main", dso="conntable")], 60)
    builder.add([Frame("main", dso="conntable")], 40)
    profile = builder.build()
    kind = CacheProjections.KIND
    docs = [StoredDocument(kind, name, stored(name, doc)) for name, doc in documents.items()]
    store = Store(tmp_path / "store")
    facts = RunInfo(command="conntable 1000", mode="cache")
    info = store.add_run(facts, Recording(profile, documents=docs))
    run = store.load_run(info.id)
    return Context(profile=run.profile, run=run.info, cache=run.cache)
