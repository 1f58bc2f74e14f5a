"""Where the fleet store's files live: a local folder or an S3-compatible bucket.

Both go through pyarrow's filesystems, so every other module writes one code path.
A file appears whole or not at all: on a folder it is written to `_tmp/` and renamed
into place (a rename within one file system is atomic); on S3 one PUT is atomic. A
write that fails deletes its temporary file; what a killed writer left in `_tmp/` is
deleted when the store is next opened, once older than TMP_MAX_AGE_S (younger files
may belong to a writer still at work).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow.fs as pafs

from ...errors import UserError

TMP_DIR = "_tmp"
# No write of one file takes this long: a temporary file older than this is a leftover.
TMP_MAX_AGE_S = 3600.0


class StoreUnavailable(UserError):
    """The fleet store cannot be read or written now (S3 down, disk full, no permission).

    The collector answers 503 to this, so agents keep the window and retry.
    """


@dataclass(frozen=True)
class Files:
    """Files under one root, named by '/'-separated paths relative to it."""

    fs: pafs.FileSystem
    base: str  # the root inside fs: an absolute folder, or bucket/prefix
    local: bool

    def path(self, rel: str) -> str:
        return f"{self.base}/{rel}" if rel else self.base

    def put(self, rel: str, data: bytes) -> None:
        """Write `rel` atomically: readers see the old state or the whole new file."""
        target = self._target(rel)
        if not self.local:
            with self.fs.open_output_stream(target) as out:
                out.write(data)
            return
        self._replace(target, lambda tmp: _write(tmp, data))

    def put_file(self, rel: str, source: str) -> None:
        """Copy the local file `source` to `rel`, as atomically as put, without holding
        it in memory (debug files run to hundreds of MB)."""
        target = self._target(rel)
        if not self.local:
            pafs.copy_files(source, target, pafs.LocalFileSystem(), self.fs)
            return
        self._replace(target, lambda tmp: _copy(source, tmp))

    def _target(self, rel: str) -> str:
        target = self.path(rel)
        self.fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        return target

    def _replace(self, target: str, write: Callable[[str], None]) -> None:
        """Write a temporary file with `write`, then rename it to `target`."""
        tmp_dir = self.path(TMP_DIR)
        self.fs.create_dir(tmp_dir, recursive=True)
        tmp = f"{tmp_dir}/{uuid.uuid4().hex}"
        try:
            write(tmp)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def clear_tmp(self) -> None:
        """Delete the temporary files killed writers left (a folder's `_tmp/` only)."""
        if not self.local:
            return
        oldest = time.time() - TMP_MAX_AGE_S
        with contextlib.suppress(OSError), os.scandir(self.path(TMP_DIR)) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):  # gone, or a store we may only read
                    if entry.stat().st_mtime < oldest:
                        os.unlink(entry.path)

    def get(self, rel: str) -> bytes:
        with self.fs.open_input_stream(self.path(rel)) as f:
            return bytes(f.read())

    def exists(self, rel: str) -> bool:
        return self.fs.get_file_info(self.path(rel)).type != pafs.FileType.NotFound

    def listing(self, rel: str, recursive: bool = False) -> list[pafs.FileInfo]:
        """Entries under folder `rel` (none when it does not exist), sorted by path."""
        selector = pafs.FileSelector(self.path(rel), allow_not_found=True, recursive=recursive)
        return sorted(self.fs.get_file_info(selector), key=lambda i: i.path)

    def names(self, rel: str, *, dirs: bool = False) -> list[str]:
        """Names of the files (or folders) directly in folder `rel`."""
        kind = pafs.FileType.Directory if dirs else pafs.FileType.File
        return [i.base_name for i in self.listing(rel) if i.type == kind]

    def delete(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):  # another cleaner got there first
            self.fs.delete_file(self.path(rel))

    def delete_dir(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_dir(self.path(rel))

    def relative(self, info_path: str) -> str:
        return info_path[len(self.base) + 1 :]


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _copy(source: str, path: str) -> None:
    shutil.copyfile(source, path)
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def open_root(root: str, endpoint: str | None = None) -> Files:
    """Files of a folder path or an `s3://bucket/prefix` URL.

    The S3 endpoint is `endpoint`, else $AWS_ENDPOINT_URL, else AWS itself;
    credentials and region come from the usual AWS_* environment variables.
    """
    if root.startswith("s3://"):
        return _s3(root, endpoint or os.environ.get("AWS_ENDPOINT_URL"))
    if "://" in root:
        raise UserError(f"unsupported fleet store {root!r}: give a folder or s3://bucket/prefix")
    return Files(pafs.LocalFileSystem(), os.path.abspath(root).rstrip("/"), local=True)


def _s3(root: str, endpoint: str | None) -> Files:
    url = urlparse(root)
    if not url.netloc:
        raise UserError(f"no bucket in {root!r}: write s3://BUCKET/PREFIX")
    options: dict = {"region": os.environ.get("AWS_REGION", "us-east-1")}
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        options["endpoint_override"] = parsed.netloc
        options["scheme"] = parsed.scheme
    fs = pafs.S3FileSystem(**options)
    base = f"{url.netloc}/{url.path.strip('/')}".rstrip("/")
    try:
        bucket = fs.get_file_info(url.netloc)
    except OSError as e:
        raise StoreUnavailable(f"cannot reach the fleet store {root}: {e}") from e
    if bucket.type == pafs.FileType.NotFound:
        raise UserError(f"bucket {url.netloc!r} does not exist: create it, then retry")
    return Files(fs, base, local=False)
