"""fleet watch against a real webhook receiver on 127.0.0.1: one alert per finding per
change, none below threshold, a version regression alert fires once, a webhook that is
down loses nothing."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Container, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from fleet_sim import service_name, windows  # noqa: E402

from perfsleuth.cli import main  # noqa: E402
from perfsleuth.fleet import alerts  # noqa: E402
from perfsleuth.store.fleet import FleetStore  # noqa: E402

NOW = 1_700_000_000.0 - 1_700_000_000.0 % 3600 + 1800
RULES = """
[[saving]]
name = "worth-it"
min_cores = 0.1
range = "10m"

[[regression]]
name = "release"
label = "version"
a = "1.4"
b = "1.5"
min_share = 0.02
range = "10m"
"""


class Receiver(BaseHTTPRequestHandler):
    got: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.got.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    server.timeout = 5
    Receiver.got = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", Receiver.got
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def fill(store: FleetStore, hosts: Container[int], start: float, count: int) -> None:
    """Simulator windows; the hosts running the allocator service are on version 1.5."""
    for w in windows(hosts=6, services=3, count=count, start=start):
        host = int(w.labels["host"].rsplit("-", 1)[1])
        if host in hosts:
            version = "1.5" if host % 3 == 0 else "1.4"
            store.append(replace(w, labels={**w.labels, "version": version}))


def test_watch_sends_each_alert_once_per_change(tmp_path: Path, webhook, capsys) -> None:
    url, got = webhook
    store = FleetStore(str(tmp_path / "fleet"))
    fill(store, range(6), NOW - 600, 6)
    rules = tmp_path / "alerts.toml"
    rules.write_text(RULES)
    watch = ["fleet", "watch", "--store", store.root, "--rules", str(rules), "--webhook", url]
    once = [*watch, "--once", "--to", str(NOW)]

    assert main(once) == 0
    savings = [a for a in got if a["alert"] == "saving"]
    regressions = [a for a in got if a["alert"] == "regression"]
    sent = {a["finding"]["rule"]: a for a in savings}
    assert set(sent) >= {"python.json", "compression.zlib"}
    assert all(a["finding"]["cores_saved"] >= 0.1 for a in savings)
    assert "allocator.glibc" not in sent  # 0.06 cores: below the threshold
    assert sent["python.json"]["finding"]["services"][0]["service"] == service_name(2)
    assert "cores" in sent["python.json"]["text"] and "svc-2-json" in sent["python.json"]["text"]
    grown = {a["change"]["function"] for a in regressions}
    assert "_int_free" in grown and all(a["change"]["delta_self"] >= 0.02 for a in regressions)

    count = len(got)
    assert main(once) == 0
    assert len(got) == count  # nothing changed: nothing sent

    fill(store, range(2, 3), NOW - 600 + 5, 6)  # the JSON service's load doubles
    assert main(once) == 0
    again = got[count:]
    assert [a["finding"]["rule"] for a in again if a["alert"] == "saving"] == ["python.json"]
    assert not [a for a in again if a["alert"] == "regression"]


def test_a_finding_that_leaves_and_comes_back_alerts_again(tmp_path: Path, webhook, capsys) -> None:
    url, got = webhook
    store = FleetStore(str(tmp_path / "fleet"))
    others = (0, 1, 3, 4)  # every host but the JSON service's (2 and 5)
    for n, hosts in enumerate((range(6), others, others, range(6), others, range(6))):
        fill(store, hosts, NOW + (n - 1) * 600, 6)  # ranges of 10 minutes, the rules' range
    rules = tmp_path / "alerts.toml"
    rules.write_text(RULES)
    watch = ["fleet", "watch", "--store", store.root, "--rules", str(rules), "--webhook", url]

    def savings_at(now: float) -> list[str]:
        count = len(got)
        assert main([*watch, "--once", "--to", str(now)]) == 0
        return sorted(a["finding"]["rule"] for a in got[count:] if a["alert"] == "saving")

    assert "python.json" in savings_at(NOW)
    assert savings_at(NOW + 600) == []  # gone: nothing to send
    assert savings_at(NOW + 1200) == []  # gone for a whole range: forgotten
    assert savings_at(NOW + 1800) == ["python.json"]  # back: news again, the rest is not
    assert savings_at(NOW + 2400) == []  # gone for one pass only: still remembered
    assert savings_at(NOW + 3000) == []
    state = json.loads((tmp_path / "alerts.state.json").read_text())
    assert any(key.startswith("saving:worth-it:python.json:") for key in state["sent"])
    assert state["gone"] == {}


def test_a_regression_between_the_range_before_and_the_last_one(
    tmp_path: Path, webhook, capsys
) -> None:
    url, got = webhook
    store = FleetStore(str(tmp_path / "fleet"))
    fill(store, (1, 2, 4, 5), NOW - 1200, 6)  # no allocator service in the range before
    fill(store, range(6), NOW - 600, 6)  # then it runs: malloc and free grow
    rules = tmp_path / "alerts.toml"
    rules.write_text('[[regression]]\nname = "grew"\nmin_share = 0.01\nrange = "10m"\n')
    once = ["fleet", "watch", "--store", store.root, "--rules", str(rules), "--webhook", url]
    once += ["--once", "--to", str(NOW)]

    assert main(once) == 0
    grown = {a["change"]["function"]: a for a in got}
    assert "_int_free" in grown
    alert = grown["_int_free"]
    assert alert["alert"] == "regression" and alert["rule"] == "grew"
    assert (alert["a"]["from"], alert["a"]["to"]) == (NOW - 1200, NOW - 600)
    assert (alert["b"]["from"], alert["b"]["to"]) == (NOW - 600, NOW)
    assert alert["change"]["self_a"] == 0 and alert["change"]["self_b"] >= 0.01
    assert "the range before -> the last range" in alert["text"]
    assert all(a["change"]["delta_self"] >= 0.01 for a in got)
    count = len(got)
    assert main(once) == 0
    assert len(got) == count


def test_a_webhook_that_is_down_loses_nothing(tmp_path: Path, webhook, capsys) -> None:
    url, got = webhook
    store = FleetStore(str(tmp_path / "fleet"))
    fill(store, range(6), NOW - 600, 2)
    rules = tmp_path / "alerts.toml"
    rules.write_text(RULES)
    base = ["fleet", "watch", "--store", store.root, "--rules", str(rules), "--once"]
    down = "http://127.0.0.1:9/hook"  # the discard port: nothing listens
    assert main([*base, "--webhook", down, "--to", str(NOW)]) == 1
    assert "unreachable" in capsys.readouterr().err
    assert main([*base, "--webhook", url, "--to", str(NOW)]) == 0
    assert got and all("text" in a for a in got)


def test_bad_rules_files_say_what_is_wrong(tmp_path: Path, capsys) -> None:
    rules = tmp_path / "alerts.toml"
    base = ["fleet", "watch", "--store", str(tmp_path), "--rules", str(rules)]
    for text, message in (
        ("[[saving]]\nname = 'x'\n", "give a threshold"),
        ("[[saving]]\nmin_cores = 1\ncolour = 'red'\n", "unknown key 'colour'"),
        ("[[regression]]\nmin_share = 0.1\nlabel = 'version'\n", "label, a and b together"),
        ("[[alert]]\n", "unknown table 'alert'"),
        ("min_cores = [", "not TOML"),
        ("[[saving]]\nname = 'a:b'\nmin_cores = 1\n", "cannot contain ':'"),
        ("[[saving]]\nname = 'x'\nmin_cores = 1\n" * 2, "two [[saving]] tables are named 'x'"),
    ):
        rules.write_text(text)
        assert main([*base, "--webhook", "http://127.0.0.1:9/", "--once"]) == 2
        assert message in capsys.readouterr().err


def test_a_state_file_of_the_first_shape_is_read(tmp_path: Path) -> None:
    path = tmp_path / "alerts.state.json"
    path.write_text('{"saving:worth-it:python.json:f:d": 2.5}')
    state = alerts.State(path)
    assert (state.sent, state.gone) == ({"saving:worth-it:python.json:f:d": 2.5}, {})
    state.save()
    assert json.loads(path.read_text()) == {"sent": state.sent, "gone": {}}
