"""Whether a file is a package's: installed under /usr, /lib, /bin or /sbin by the
system's package manager, so not the user's code to rebuild or change. /usr/local is
where the user's own `make install` goes, and is the user's."""

from __future__ import annotations

PACKAGED = ("/usr/", "/lib", "/bin/", "/sbin/")
USERS_OWN = ("/usr/local/",)


def is_packaged(path: str) -> bool:
    return path.startswith(PACKAGED) and not path.startswith(USERS_OWN)
