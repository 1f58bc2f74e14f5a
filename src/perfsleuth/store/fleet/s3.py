"""What pyarrow's S3 file system cannot do: conditional writes, and one PUT per file.

`If-None-Match: *` on PutObject creates an object only when the key is free, `If-Match:
<ETag>` replaces it only when it has not changed since it was read: the compare-and-swap
the maintenance lease and the compacted files' names rely on (AWS S3 and most S3 servers
honour both; SeaweedFS, which the tests run, does). boto3 speaks them; every AWS error
becomes one line.
"""

from __future__ import annotations

import calendar
import threading
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_tz
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

# Codes meaning "the condition did not hold": 412 from a PUT, 409 from AWS when two
# conditional writes to one key race.
CONFLICT_CODES = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}
NOT_FOUND_CODES = {"NoSuchKey", "404", "NotFound"}
T = TypeVar("T")
# The collector writes from many threads at once: one connection each.
MAX_CONNECTIONS = 64


@dataclass(frozen=True)
class Versioned:
    data: bytes
    tag: str  # what a conditional replace names: the object's ETag
    age_s: float  # since its last write, by the server's clock


class S3Error(OSError):
    """An S3 request that failed, in one line (the store turns it into StoreUnavailable)."""


class Objects:
    """Objects of one bucket through boto3 (thread-safe: one client, a connection pool)."""

    def __init__(self, bucket: str, endpoint: str | None, region: str) -> None:
        self.bucket = bucket
        config = Config(
            max_pool_connections=MAX_CONNECTIONS,
            retries={"max_attempts": 3, "mode": "standard"},
            s3={"addressing_style": "path"} if endpoint else {},
        )
        self._client: Any = None
        self._lock = threading.Lock()
        self._options = {"endpoint_url": endpoint, "region_name": region, "config": config}

    @property
    def client(self) -> Any:
        with self._lock:  # boto3's session creation is not thread-safe
            if self._client is None:
                self._client = boto3.session.Session().client("s3", **self._options)
            return self._client

    def put(self, key: str, data: bytes) -> None:
        put = self.client.put_object
        self._call("PUT", key, lambda: put(Bucket=self.bucket, Key=key, Body=data), set())

    def exists(self, key: str) -> bool:
        head = self.client.head_object
        return self._call("HEAD", key, lambda: head(Bucket=self.bucket, Key=key)) is not None

    def create(self, key: str, data: bytes) -> str | None:
        """Write `key` only if it does not exist: its ETag, or None when it did."""
        return self._conditional(key, data, CONFLICT_CODES, IfNoneMatch="*")

    def replace(self, key: str, data: bytes, tag: str) -> str | None:
        """Overwrite `key` only if its ETag is still `tag`: the new ETag, or None."""
        return self._conditional(key, data, CONFLICT_CODES | NOT_FOUND_CODES, IfMatch=tag)

    def read(self, key: str) -> Versioned | None:
        """`key`'s bytes, ETag and age; None when it does not exist."""

        def get() -> tuple[dict, bytes]:
            answer = self.client.get_object(Bucket=self.bucket, Key=key)
            return answer, answer["Body"].read()

        got = self._call("GET", key, get)
        if got is None:
            return None
        answer, data = got
        now = _http_date(answer["ResponseMetadata"]["HTTPHeaders"].get("date", ""))
        modified = answer["LastModified"].timestamp()
        return Versioned(data, answer["ETag"], max(0.0, (now or modified) - modified))

    def _conditional(
        self, key: str, data: bytes, refused: set[str], **condition: str
    ) -> str | None:
        put = self.client.put_object
        answer = self._call(
            "PUT", key, lambda: put(Bucket=self.bucket, Key=key, Body=data, **condition), refused
        )
        return None if answer is None else str(answer["ETag"])

    def _call(
        self, verb: str, key: str, request: Callable[[], T], absent: set[str] = NOT_FOUND_CODES
    ) -> T | None:
        """`request`'s answer; None when S3 answers one of the codes `absent`."""
        try:
            return request()
        except ClientError as e:
            if _code(e) in absent:
                return None
            raise _one_line(verb, key, e) from None
        except BotoCoreError as e:
            raise _one_line(verb, key, e) from None


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _one_line(verb: str, key: str, error: Exception) -> S3Error:
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "")
        reason = f"{status} {info.get('Code', '')}: {info.get('Message', '')}".strip(" :")
    else:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return S3Error(f"{verb} {key}: {reason}")


def _http_date(text: str) -> float | None:
    parsed = parsedate_tz(text)
    if parsed is None:
        return None
    return float(calendar.timegm(parsed[:9]) - (parsed[9] or 0))
