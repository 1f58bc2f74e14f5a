"""Planted: copy.deepcopy of a config dict per request. Fix (FIXED=1): a shallow copy
of the one level that is changed."""

import copy
import os

FIXED = os.environ.get("FIXED") == "1"
BASE = {"limits": {"cpu": 2, "mem": 512}, "tags": ["a", "b"], "name": "svc", "port": 80}


def handle(i):
    state = {**BASE, "limits": dict(BASE["limits"])} if FIXED else copy.deepcopy(BASE)
    state["limits"]["cpu"] = i % 4
    return state["limits"]["cpu"] + state["port"]


print(sum(handle(i) for i in range(450000)))
