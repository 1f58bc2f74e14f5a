"""The fleet store on S3 (moto's server on 127.0.0.1): the same answers as on a folder."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator

import boto3
import pytest
from integration.test_collector import NOW, TOKEN, folded_query, start, stop
from moto.server import ThreadedMotoServer
from unit.test_fleet_store import T0, fleet, fleet_top

from perfsleuth.fleet import queries
from perfsleuth.present.folded import lines
from perfsleuth.store.fleet import FleetStore

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3_url(monkeypatch) -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="fleet")
    try:
        yield "s3://fleet/prod"
    finally:
        server.stop()


@pytest.mark.timeout(120)
def test_s3_gives_the_same_answers_as_a_folder(s3_url: str, tmp_path) -> None:
    windows = fleet(8, 2, spacing=1000)
    s3, local = FleetStore(s3_url), FleetStore(str(tmp_path / "fleet"))
    for w in windows:
        assert s3.append(w) and local.append(w)
    assert not s3.append(windows[0])

    def answers(store: FleetStore) -> tuple:
        return (
            fleet_top(store),
            fleet_top(store, where="host=~web-1", by="line"),
            lines(queries.flame(store, T0, T0 + 7200)),
        )

    expected = answers(local)
    assert answers(s3) == expected
    s3.compact()
    local.compact()
    assert answers(s3) == expected
    assert s3.select(T0, T0 + 7200).levels == {"hour": 2}
    s3.put_host_status("web-0", {"lost_samples": 1})
    status = s3.status()
    assert {h["host"] for h in status["hosts"]} == {"web-0", "web-1"}
    assert status["files"] > 0 and status["bytes"] > 0
    assert s3.expire(T0 + 3600) == ["dt=2023-11-14/hour=22"]
    assert fleet_top(s3)["total"] < expected[0]["total"]


@pytest.mark.timeout(120)
def test_the_collector_takes_the_s3_endpoint_option(s3_url: str, monkeypatch) -> None:
    """`collector --endpoint URL` as `fleet --endpoint URL`: no $AWS_ENDPOINT_URL needed."""
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    running = start(s3_url, "--endpoint", endpoint, "--token", TOKEN)  # type: ignore[arg-type]
    try:
        body = b"main;handle;parse 30\nmain;handle;write 10\n"
        status, answer = running.post("/ingest", body, folded_query("shop", "web-1"))
    finally:
        err = stop(running)
    assert status == 200 and json.loads(answer)["stored"] is True, err
    store = FleetStore(s3_url, endpoint)
    assert "web-1" in {h["host"] for h in store.status()["hosts"]}
    assert queries.top(store, NOW - 3600, NOW + 60, "service=shop")["total"] == 40 * 1e9 / 100
