"""perfsleuth fleet status|top|flame|compact|expire through the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
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
    for option, bad in (("--from", "nan"), ("--to", "inf"), ("--from", "-5"), ("--to", "1e400")):
        with pytest.raises(SystemExit):
            main(["fleet", "top", "--store", root, option, bad])
        assert f"bad time '{bad}': give a time from 1970 to 9999" in capsys.readouterr().err
    assert main(["fleet", "expire", "--store", root, "--older-than", "1d"]) == 0
    assert main(["fleet", "top", *span]) == 0
    assert "no samples in this range" in capsys.readouterr().out


def test_fleet_status_gives_dropped_windows_and_lost_samples_their_own_columns(
    tmp_path: Path, capsys
) -> None:
    root = str(tmp_path / "fleet")
    store = FleetStore(root)
    for w in fleet(2, 2):
        store.append(w)
    agent = {"windows_dropped": 3, "lost_samples": 1234, "cpu_share": 0.048}
    store.put_host_status("web-1", {**agent, "agent_rss_bytes": 90 << 20, "perf_rss_bytes": 0})
    # the agent of web-2 reports its cost since it started too: the column shows that
    store.put_host_status("web-2", {"cpu_share": 0.137, "cpu_share_since_start": 0.0061})
    assert main(["fleet", "status", "--store", root, "--format", "json"]) == 0
    hosts = {h["host"]: h for h in json.loads(capsys.readouterr().out)["hosts"]}
    assert (hosts["web-1"]["windows_dropped"], hosts["web-1"]["lost_samples"]) == (3, 1234)
    assert hosts["web-1"]["metrics"]["cpu_share"] == 0.048  # every metric still there
    assert (hosts["web-0"]["windows_dropped"], hosts["web-0"]["lost_samples"]) == (None, None)

    assert main(["fleet", "status", "--store", root]) == 0
    text = capsys.readouterr().out
    assert re.search(r"samples/s +dropped windows +lost samples +agent CPU +agent RSS\n", text)
    assert re.search(r"\nweb-1 .* 19\.0 +3 +1,234 +4\.80% +90 MB\n", text)
    assert re.search(r"\nweb-0 .* 19\.0 +- +- +- +-\n", text)
    assert re.search(r"\nweb-2 .* 0\.61% +-\n", text)
    assert "windows_dropped=" not in text
