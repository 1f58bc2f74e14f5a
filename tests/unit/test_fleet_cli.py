"""perfsleuth fleet status|top|flame|compact|expire through the command line."""

from __future__ import annotations

import json
from pathlib import Path

from test_fleet_store import T0, expected_top, fleet

from perfsleuth.cli import main
from perfsleuth.store.fleet import FleetStore


def test_fleet_commands(tmp_path: Path, capsys) -> None:
    root = str(tmp_path / "fleet")
    windows = fleet(4, 2)
    store = FleetStore(root)
    for w in windows:
        store.append(w)
    span = ["--store", root, "--from", str(T0), "--to", "2023-11-15T00:00"]

    assert main(["fleet", "top", *span, "-n", "0", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unit"] == "ns" and doc["rows"] == expected_top(windows)

    assert main(["fleet", "flame", *span, "--where", "host=web-1"]) == 0
    folded = capsys.readouterr().out.splitlines()
    assert folded and all(line.startswith("main") for line in folded)
    assert main(["fleet", "flame", *span, "--where", "host=web-1", "--format", "json"]) == 0
    flame = json.loads(capsys.readouterr().out)
    assert (flame["where"], flame["unit"], flame["to"]) == ("host=web-1", "ns", T0 + 7200)
    as_folded = [
        f"{';'.join(f['function'] for f in s['frames'])} {s['cpu_ns']:.0f}" for s in flame["stacks"]
    ]
    assert sorted(as_folded) == sorted(folded)
    assert flame["total"] == sum(s["cpu_ns"] for s in flame["stacks"])
    assert [s["cpu_ns"] for s in flame["stacks"]] == sorted(
        (s["cpu_ns"] for s in flame["stacks"]), reverse=True
    )
    assert all(f["dso"] for s in flame["stacks"] for f in s["frames"])

    assert main(["fleet", "compact", "--store", root]) == 0
    assert main(["fleet", "top", *span, "-n", "0", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == doc["rows"]

    assert main(["fleet", "status", "--store", root, "--format", "json"]) == 0
    assert {h["host"] for h in json.loads(capsys.readouterr().out)["hosts"]} == {"web-0", "web-1"}
    assert main(["fleet", "status", "--store", root]) == 0
    assert "web-1" in capsys.readouterr().out

    assert main(["fleet", "top", *span, "--where", "host=~("]) == 2
    assert "bad regular expression" in capsys.readouterr().err
    assert main(["fleet", "expire", "--store", root, "--older-than", "1d"]) == 0
    assert main(["fleet", "top", *span]) == 0
    assert "no samples in this range" in capsys.readouterr().out
