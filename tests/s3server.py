"""A real S3 server for the tests: SeaweedFS (`weed`, built into .venv/bin by
scripts/build-seaweedfs.sh) on 127.0.0.1, one per test session, a bucket per test.

Import the fixtures into a test module: `from s3server import s3_server, s3_url`.
The server dies with the test process (PR_SET_PDEATHSIG), and at the session's end.
"""

from __future__ import annotations

import ctypes
import json
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

WEED = Path(sys.executable).parent / "weed"
ACCESS_KEY, SECRET_KEY, REGION = "perfsleuth-test", "perfsleuth-test-secret", "us-east-1"
START_TIMEOUT_S = 120.0
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    process: subprocess.Popen
    log: Path

    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def client(self):  # noqa: ANN201 -- boto3's client type is generated
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )

    def bucket(self) -> str:
        """A new empty bucket."""
        name = f"t-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name


def free_ports(n: int) -> list[int]:
    """`n` free ports whose +10000 (SeaweedFS's gRPC ports) are free too."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 < 65536 and port not in ports and _free(port + 10000):
            ports.append(port)
    return ports


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def start(folder: Path) -> S3Server:
    if not WEED.exists():
        pytest.fail(f"{WEED} is missing: run `bash scripts/build-seaweedfs.sh` (make setup does)")
    master, volume, filer, s3 = free_ports(4)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "s3.json"
    identity = {"name": "test", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]}
    identity["actions"] = ["Admin", "Read", "List", "Tagging", "Write"]
    config.write_text(json.dumps({"identities": [identity]}))
    log = folder / "weed.log"
    command = [str(WEED), "server", f"-dir={folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
    command += [f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}"]
    command += ["-s3", f"-s3.port={s3}", f"-s3.config={config}", "-volume.max=0"]
    # SeaweedFS turns every volume read-only (500 InternalError on PUT) below 1% of the disk
    # free; on a large, mostly-used disk that is gigabytes the tests never need.
    command += ["-master.volumeSizeLimitMB=64", "-volume.minFreeSpace=256MiB"]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )
    server = S3Server(f"http://127.0.0.1:{s3}", process, log)
    _wait_ready(server)
    return server


def _wait_ready(server: S3Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            break
        try:
            server.client().list_buckets()
            return
        except Exception:  # not listening yet
            time.sleep(0.3)
    server.process.kill()
    tail = server.log.read_text(errors="replace")[-2000:]
    pytest.fail(f"SeaweedFS did not start in {START_TIMEOUT_S:.0f} s:\n{tail}")


def stop(server: S3Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(20)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = start(tmp_path_factory.mktemp("seaweedfs"))
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture
def s3_url(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """`s3://<a new bucket>/prod`, with the AWS_* variables pointing at the server."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    return f"s3://{s3_server.bucket()}/prod"
