"""A package's files against the user's own: one test for every analyzer that asks."""

from __future__ import annotations

import pytest

from perfsleuth.binaries.packaged import is_packaged


@pytest.mark.parametrize(
    "path",
    ["/usr/bin/node", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/ld-linux.so.2", "/bin/sh",
     "/sbin/ldconfig", "/usr/libexec/git-core/git", "/lib64/ld-linux-x86-64.so.2"],
)  # fmt: skip
def test_files_under_the_package_managers_folders_are_packaged(path: str) -> None:
    assert is_packaged(path)


@pytest.mark.parametrize(
    "path", ["/usr/local/bin/m4", "/home/me/build/a.out", "/tmp/x/speedtest1", "[vdso]", "sort"]
)
def test_the_users_own_files_are_not(path: str) -> None:
    assert not is_packaged(path)
