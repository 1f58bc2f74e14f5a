"""The labels every stored sample of the fleet carries, and how a query names them: apart
from model/fleet.py (which names them too) so that views/keys.py's groupings, which
every `top` and `diff` takes for --by, come without the fleet's model."""

import re

# Every stored sample carries these labels ("" when the source does not say).
LABELS = ("host", "service", "pid", "comm", "exe", "build_id", "cgroup")
LABEL_GROUPINGS = ("service", "host")  # the labels a fleet query can group by by name
LABEL_PREFIX = "label:"  # and any label as label:NAME (fleet top --by label:version)
LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")  # what --where and --by may name
