"""The speedscope reader on py-spy 0.4.3's own output (`py-spy record -f speedscope` of a
loop calling `hot` and `cold`, captured) and on perfsleuth's export of both kinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.formats import read_any, speedscope
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.present import PROFILE, TitledProfile, write
from perfsleuth.present import speedscope as exported

PY_SPY = Path(__file__).resolve().parents[1] / "fixtures" / "speedscope" / "py-spy-0.4.3.json"


def self_by_function(profile) -> dict[str, float]:
    out: dict[str, float] = {}
    for stack, weight, *_ in profile.rows():
        name = profile.frames[stack[0]].function
        out[name] = out.get(name, 0.0) + weight
    return out


def test_py_spys_file_is_read_as_time_per_python_function() -> None:
    profile, fmt = read_any(PY_SPY)
    doc = json.loads(PY_SPY.read_bytes())
    assert fmt == "speedscope" and profile.unit == "ns"
    # py-spy weighs each sample 0.01 s: 109 samples
    assert profile.total == pytest.approx(sum(doc["profiles"][0]["weights"]) * 1e9)
    hot = self_by_function(profile)["hot"]
    assert hot / profile.total > 0.8
    hot_frames = [f for f in profile.frames if f.function == "hot"]  # a frame per line
    assert {(f.dso, Path(f.file).name) for f in hot_frames} == {("[python:busy]", "busy.py")}
    assert all(4 <= f.line <= 6 for f in hot_frames)
    assert {t.tid for t in profile.threads} == {25124}
    # root first in the file, leaf first here: hot is called by busy.py's <module>
    for stack, *_ in profile.rows():
        if profile.frames[stack[0]].function == "hot":
            assert [profile.frames[f].function for f in stack] == ["hot", "<module>"]


@pytest.mark.parametrize("kind", ["sampled", "evented"])
def test_perfsleuths_own_export_reads_back(kind: str, tmp_path: Path) -> None:
    builder = ProfileBuilder(unit="ns")
    main, a, b = Frame("main", "app"), Frame("a", "app"), Frame("b", "app")
    worker = Thread(7, name="worker")
    builder.add([a, main], 300.0, thread=worker)
    builder.add([b, a, main], 200.0, thread=worker)
    builder.add([main], 100.0)
    out = tmp_path / "out.json"
    if kind == "sampled":  # what `perfsleuth export --speedscope` writes
        write(PROFILE, TitledProfile(builder.build(), "t"), "speedscope", str(out))
    else:
        out.write_text(json.dumps(exported.to_json(builder.build(), "evented", "t")))
    profile = speedscope.read(out)
    assert self_by_function(profile) == {"a": 300.0, "b": 200.0, "main": 100.0}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"profiles": []}', "shared.frames"),
        (b'{"shared": {"frames": []}, "profiles": []}', "holds no profile"),
        (
            b'{"shared": {"frames": [{"name": "f"}]}, "profiles": [{"type": "sampled",'
            b' "unit": "none", "samples": [[3]], "weights": [1]}]}',
            "frame index 3",
        ),
        (
            b'{"shared": {"frames": [{"name": "f"}]}, "profiles": [{"type": "evented",'
            b' "unit": "seconds", "events": [{"type": "O", "frame": 0, "at": 2},'
            b' {"type": "C", "frame": 0, "at": 1}]}]}',
            "not in time order",
        ),
        (
            b'{"shared": {"frames": [{"name": "f"}]}, "profiles": [{"type": "sampled",'
            b' "unit": "parsecs", "samples": [], "weights": []}]}',
            "unknown speedscope unit",
        ),
    ],
)
def test_bad_files_are_named(body: bytes, message: str) -> None:
    with pytest.raises(UserError, match=message):
        speedscope.parse(body, "bad.json")
