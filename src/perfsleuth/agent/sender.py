"""Pushing windows and the agent's own metrics to the collector, with backoff.

A window goes to the collector's route for agents (formats.wire.window_pprof.AGENT_ROUTE,
not the /ingest Pyroscope's clients push to) in the agent's wire format (window_pprof:
Pyroscope's /ingest query parameters and a gzipped pprof body); its WINDOW_HEADER makes
a push idempotent.
"""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

from ..formats.wire.window_pprof import AGENT_ROUTE, WINDOW_HEADER

# Statuses worth retrying: the collector is busy, restarting or rate-limiting.
RETRY = {408, 425, 429, 500, 502, 503, 504}
# Statuses that ask the operator to act (token, URL); windows stay spooled meanwhile.
WAIT = {401, 403, 404}


class SendError(Exception):
    """A push that failed; `retry` says whether sending it again may succeed."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


class Sender:
    def __init__(self, server: str, token: str | None, timeout: float = 10.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    def push(self, meta: dict[str, Any], body: bytes) -> None:
        """Send a spooled window: meta holds its id and its query parameters."""
        query = urlencode(meta["query"])
        headers = {WINDOW_HEADER: meta["id"], "Content-Type": "application/octet-stream"}
        self._post(f"{AGENT_ROUTE}?{query}", body, headers)

    def post_status(self, metrics: dict[str, Any]) -> None:
        body = json.dumps(metrics).encode()
        self._post("/agent/status", body, {"Content-Type": "application/json"})

    def _post(self, path: str, body: bytes, headers: dict[str, str]) -> None:
        if self.token:
            headers = {**headers, "Authorization": f"Bearer {self.token}"}
        req = urllib.request.Request(self.server + path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read(300).decode(errors="replace").strip().splitlines()
            message = f"HTTP {e.code}" + (f": {detail[0]}" if detail else "")
            raise SendError(message, retry=e.code in RETRY or e.code in WAIT) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise SendError(f"cannot reach {self.server} ({reason})", retry=True) from None


class Backoff:
    """Exponential backoff with jitter: 1 s, 2 s, 4 s ... up to `cap`, each
    randomised to half..full so that agents restarted together spread out."""

    def __init__(self, base: float = 1.0, cap: float = 60.0) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0
        self.next_at = 0.0

    def ready(self, now: float) -> bool:
        return now >= self.next_at

    def failed(self, now: float) -> float:
        self.failures += 1
        delay = min(self.cap, self.base * 2 ** (self.failures - 1))
        delay = random.uniform(delay / 2, delay)
        self.next_at = now + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.next_at = 0.0
