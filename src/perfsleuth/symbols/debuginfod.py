"""A debuginfod client: the debug file of a build-id, from the servers the user names.

debuginfod (elfutils; Debian, Fedora and Ubuntu run public ones) serves
`GET <server>/buildid/<hex build-id>/debuginfo`: the ELF file with that build-id's
DWARF and symbol table, 404 when the server does not know it. Servers are given as
`--debuginfod URL` or, as every debuginfod client does, by $DEBUGINFOD_URLS
(space-separated, tried in order).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from ..errors import UserError

ENV = "DEBUGINFOD_URLS"
TIMEOUT_S = 10.0  # per connection and per read: a debug file may be large, a stall is not
MAX_BYTES = 4 << 30  # a larger "debug file" is a misconfigured server
_BUILD_ID = re.compile(r"[0-9a-f]{8,128}")


def server_urls(given: str | None = None) -> list[str]:
    """The servers to ask: `given` (space-separated), else $DEBUGINFOD_URLS."""
    text = given if given is not None else os.environ.get(ENV, "")
    urls = [u.rstrip("/") for u in text.split()]
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UserError(f"debuginfod server {url!r}: give an http:// or https:// URL")
    return urls


def valid_build_id(build_id: str) -> bool:
    """Whether `build_id` is hex: only those reach a URL or a file name (ids come from
    payloads)."""
    return bool(_BUILD_ID.fullmatch(build_id))


@dataclass
class Fetched:
    """What asking the servers for one build-id gave."""

    path: str | None = None  # the debug file, downloaded into the folder given
    # (server, why) for each server that did not answer; a 404 is an answer
    failures: list[tuple[str, str]] = field(default_factory=list)


def fetch_debuginfo(urls: list[str], build_id: str, folder: str) -> Fetched:
    """The debug file of `build_id` from the first server that has it, downloaded into
    `folder` whole or not at all; path None when none has it (404) or none answered."""
    fetched = Fetched()
    if not valid_build_id(build_id):
        return fetched
    for url in urls:
        try:
            fetched.path = _download(f"{url}/buildid/{build_id}/debuginfo", folder)
            return fetched
        except urllib.error.HTTPError as e:
            if e.code != 404:
                fetched.failures.append((url, f"HTTP {e.code}"))
        except (urllib.error.URLError, OSError, ValueError) as e:
            fetched.failures.append((url, str(getattr(e, "reason", e))))
    return fetched


def _download(url: str, folder: str) -> str:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".debuginfo-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:
            shutil.copyfileobj(_Capped(answer), out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


class _Capped:
    """A response read through, refusing more than MAX_BYTES."""

    def __init__(self, answer) -> None:
        self.answer, self.seen = answer, 0

    def read(self, n: int = -1) -> bytes:
        chunk = self.answer.read(n)
        self.seen += len(chunk)
        if self.seen > MAX_BYTES:
            raise ValueError(f"more than {MAX_BYTES >> 30} GiB: not a debug file")
        return chunk
