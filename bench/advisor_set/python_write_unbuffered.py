"""Planted: a file opened unbuffered, written one small record at a time (one
write(2) each). Fix (FIXED=1): the default buffered file."""

import os

FIXED = os.environ.get("FIXED") == "1"

with open("/dev/null", "wb", buffering=-1 if FIXED else 0) as out:
    for i in range(2000000):
        out.write(b"event %d\n" % i)
