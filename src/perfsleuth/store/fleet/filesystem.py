"""Where the fleet store's files live: a local folder or an S3-compatible bucket.

Both are read through pyarrow's filesystems, so every other module writes one code
path; S3 writes go through boto3 (s3.py): one PUT per file, and conditional writes. A
file appears whole or not at all: on a folder it is written to `_tmp/` and renamed
into place (a rename within one file system is atomic); on S3 one PUT is atomic. A
write that fails deletes its temporary file; what a killed writer left in `_tmp/` is
deleted when the store is next opened, once older than TMP_MAX_AGE_S (younger files
may belong to a writer still at work).

`create` and `replace` are the compare-and-swap of the maintenance lease and of the
compacted files' names: on S3 conditional PUTs, on a folder a hard link (which fails
when the name is taken) and a rename under an flock (released when its process dies).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow.fs as pafs

from ...errors import UserError
from .s3 import Objects, Versioned

TMP_DIR = "_tmp"
# No write of one file takes this long: a temporary file older than this is a leftover.
TMP_MAX_AGE_S = 3600.0
_LIBC = ctypes.CDLL(None, use_errno=True)


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
    objects: Objects | None = None  # S3 only: the bucket through boto3

    @property
    def prefix(self) -> str:
        """The root's key prefix inside its bucket (S3)."""
        return self.base.partition("/")[2]

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def path(self, rel: str) -> str:
        return f"{self.base}/{rel}" if rel else self.base

    def put(self, rel: str, data: bytes) -> None:
        """Write `rel` atomically: readers see the old state or the whole new file."""
        if self.objects is not None:
            self.objects.put(self.key(rel), data)
            return
        self._replace(self._target(rel), lambda tmp: _write(tmp, data))

    def create(self, rel: str, data: bytes, *, durable: bool = True) -> str | None:
        """Write `rel` only if it does not exist yet: its tag, or None when it did. With
        `durable` False a folder's file is durable only after the next `sync`."""
        if self.objects is not None:
            return self.objects.create(self.key(rel), data)
        target = self._target(rel)
        tmp = self._tmp()
        try:
            _write(tmp, data, durable)
            os.link(tmp, target)  # atomic, and fails when the name is taken
        except FileExistsError:
            return None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return _local_tag(target, data)

    def sync(self) -> None:
        """Make every file written so far durable: for a folder one syncfs(2) of its file
        system (an fsync per small file cost ~0.4 ms of CPU each); S3 writes are."""
        if self.objects is None:
            _syncfs(self.base)

    def read_versioned(self, rel: str) -> Versioned | None:
        """`rel`'s bytes, the tag a `replace` names, and its age; None when absent."""
        if self.objects is not None:
            return self.objects.read(self.key(rel))
        path = self.path(rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
                modified = os.fstat(f.fileno()).st_mtime
        except FileNotFoundError:
            return None
        return Versioned(data, _local_tag(path, data), max(0.0, time.time() - modified))

    def replace(self, rel: str, data: bytes, tag: str) -> str | None:
        """Overwrite `rel` only if it is unchanged since it was read with tag `tag`: the
        new tag, or None."""
        if self.objects is not None:
            return self.objects.replace(self.key(rel), data, tag)
        target = self._target(rel)
        with open(f"{target}.cas", "a") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)  # released with the file, or a killed owner
            current = self.read_versioned(rel)
            if current is None or current.tag != tag:
                return None
            self._replace(target, lambda tmp: _write(tmp, data))
            return _local_tag(target, data)

    def put_file(self, rel: str, source: str) -> None:
        """Copy the local file `source` to `rel`, as atomically as put, without holding
        it in memory (debug files run to hundreds of MB)."""
        target = self._target(rel)
        if not self.local:
            pafs.copy_files(source, target, pafs.LocalFileSystem(), self.fs)
            return
        self._replace(target, lambda tmp: _copy(source, tmp))

    def _tmp(self) -> str:
        tmp_dir = self.path(TMP_DIR)
        if self.local:  # a flush makes one per window: pyarrow's create_dir cost ~10x
            os.makedirs(tmp_dir, exist_ok=True)
        else:
            self.fs.create_dir(tmp_dir, recursive=True)
        return f"{tmp_dir}/{uuid.uuid4().hex}"

    def _target(self, rel: str) -> str:
        target = self.path(rel)
        if self.local:  # S3 has no folders: a key needs none
            os.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
        return target

    def _replace(self, target: str, write: Callable[[str], None]) -> None:
        """Write a temporary file with `write`, then rename it to `target`."""
        tmp = self._tmp()
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
        if self.objects is not None:  # one HEAD (pyarrow also lists, for a folder)
            return self.objects.exists(self.key(rel))
        if self.local:  # asked once per window pushed: pyarrow's file info cost ~10x
            return os.path.lexists(self.path(rel))
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


def _write(path: str, data: bytes, durable: bool = True) -> None:
    with open(path, "wb") as out:
        out.write(data)
        if durable:
            out.flush()
            os.fsync(out.fileno())


def _syncfs(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _LIBC.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise StoreUnavailable(f"cannot sync the fleet store {folder}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _copy(source: str, path: str) -> None:
    shutil.copyfile(source, path)
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def _local_tag(path: str, data: bytes) -> str:
    """A folder's stand-in for an ETag: the content's hash and the file's mtime."""
    return f"{hashlib.blake2b(data, digest_size=8).hexdigest()}-{os.stat(path).st_mtime_ns}"


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
    endpoint_url = None
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        options["endpoint_override"] = parsed.netloc
        options["scheme"] = parsed.scheme
        endpoint_url = f"{parsed.scheme}://{parsed.netloc}"
    fs = pafs.S3FileSystem(**options)
    base = f"{url.netloc}/{url.path.strip('/')}".rstrip("/")
    objects = Objects(url.netloc, endpoint_url, options["region"])
    try:
        bucket = fs.get_file_info(url.netloc)
    except OSError as e:
        raise StoreUnavailable(f"cannot reach the fleet store {root}: {e}") from e
    if bucket.type == pafs.FileType.NotFound:
        raise UserError(f"bucket {url.netloc!r} does not exist: create it, then retry")
    return Files(fs, base, local=False, objects=objects)
