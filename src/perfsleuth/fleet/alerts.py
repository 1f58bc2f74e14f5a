"""`fleet watch`: alerts to a webhook when a fix would pay, or a function's share grew.

The rules file is data (TOML): `[[saving]]` tables alert on fleet advice whose
estimated saving reaches `min_cores` (cores saved) and/or `min_share` (its gain as a
fraction of the fleet's CPU); `[[regression]]` tables alert when a function's self share
grew by `min_share` between the range before and the last one, or between two values
of a label (`label = "version"`, `a = "1.4"`, `b = "1.5"`). Every table may filter by
`where` (fleet --where syntax) and set its `range` (default 1h); saving rules may
keep only some finding `kinds`.

No alert storm: what was sent is kept in a state file (JSON), and the same alert is
sent again only when its value moved by MATERIAL (relative) since it was sent. One
that falls below REARM of its threshold, or that its rule no longer produces at all
for a whole range of the rule (the finding is gone), is forgotten, so a later return
alerts again. Rule names are the keys' owners: unique per kind, without ':'.
"""

from __future__ import annotations

import json
import os
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..store.fleet import FleetStore
from .advice import FleetAdvice, advise
from .engine import Engine
from .filters import parse
from .trends import Side, diff

MATERIAL = 0.25  # a change of a quarter of the value sent makes it news again
REARM = 0.8  # below 80% of its threshold an alert is forgotten (no flapping)
DEFAULT_RANGE_S = 3600.0
WEBHOOK_TIMEOUT_S = 10.0
SAVING_KEYS = {"name", "min_cores", "min_share", "kinds", "where", "range"}
REGRESSION_KEYS = {"name", "min_share", "where", "range", "label", "a", "b"}


@dataclass(frozen=True)
class AlertRule:
    kind: str  # "saving" or "regression"
    name: str
    min_cores: float = 0.0
    min_share: float = 0.0
    kinds: tuple[str, ...] = ()
    where: str = ""
    range_s: float = DEFAULT_RANGE_S
    label: str = ""
    a: str = ""
    b: str = ""

    @property
    def owner(self) -> str:
        """The prefix of every alert key this rule produces."""
        return f"{self.kind}:{self.name}:"


@dataclass
class Alert:
    key: str  # what it is about: the same key is the same alert
    value: float  # what crossed the threshold (cores saved, or share points grown)
    threshold: float
    payload: dict[str, Any] = field(default_factory=dict)


def load_rules(path: Path, parse_duration: Callable[[str], float]) -> list[AlertRule]:
    """The rules of an alerts file; one line naming the mistake otherwise."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not TOML ({e})") from None
    unknown = set(data) - {"saving", "regression"}
    if unknown:
        name = sorted(unknown)[0]
        raise UserError(f"{path}: unknown table {name!r}; use [[saving]] or [[regression]]")
    rules = [
        _rule(path, kind, n, table, parse_duration)
        for kind in ("saving", "regression")
        for n, table in enumerate(data.get(kind, []), 1)
    ]
    if not rules:
        raise UserError(f"{path}: no [[saving]] or [[regression]] table; nothing to watch")
    _check_unique(path, rules)
    return rules


def _check_unique(path: Path, rules: list[AlertRule]) -> None:
    """A rule's name owns its alerts' keys in the state: two rules cannot share one."""
    seen: set[str] = set()
    for rule in rules:
        if rule.owner in seen:
            raise UserError(f"{path}: two [[{rule.kind}]] tables are named {rule.name!r}")
        seen.add(rule.owner)


def _rule(
    path: Path, kind: str, n: int, table: dict, parse_duration: Callable[[str], float]
) -> AlertRule:
    where = f"{path}: [[{kind}]] number {n}"
    allowed = SAVING_KEYS if kind == "saving" else REGRESSION_KEYS
    extra = set(table) - allowed
    if extra:
        known = ", ".join(sorted(allowed))
        raise UserError(f"{where}: unknown key {sorted(extra)[0]!r} (known: {known})")
    try:
        rule = AlertRule(
            kind=kind,
            name=str(table.get("name", f"{kind}-{n}")),
            min_cores=float(table.get("min_cores", 0.0)),
            min_share=float(table.get("min_share", 0.0)),
            kinds=tuple(str(k) for k in table.get("kinds", ())),
            where=str(table.get("where", "")),
            range_s=parse_duration(str(table["range"])) if "range" in table else DEFAULT_RANGE_S,
            label=str(table.get("label", "")),
            a=str(table.get("a", "")),
            b=str(table.get("b", "")),
        )
    except (TypeError, ValueError) as e:
        raise UserError(f"{where}: {e}") from None
    parse(rule.where)
    if ":" in rule.name:
        raise UserError(f"{where}: a name cannot contain ':' ({rule.name!r})")
    if rule.min_cores <= 0 and rule.min_share <= 0:
        raise UserError(f"{where}: give a threshold, min_cores or min_share (above 0)")
    if kind == "regression" and bool(rule.label) != bool(rule.a and rule.b):
        raise UserError(f"{where}: a version comparison needs label, a and b together")
    return rule


def evaluate(
    store: FleetStore, rule: AlertRule, now: float, engine: Engine | None = None
) -> list[Alert]:
    """The alerts a rule raises for the range ending at `now`."""
    if rule.kind == "saving":
        return _savings(store, rule, now, engine)
    return _regressions(store, rule, now, engine)


def _savings(store: FleetStore, rule: AlertRule, now: float, engine: Engine | None) -> list[Alert]:
    doc = advise(store, now - rule.range_s, now, rule.where or None, FleetAdvice(engine=engine))
    alerts = []
    for f in doc["findings"]:
        if rule.kinds and f["kind"] not in rule.kinds:
            continue
        value, threshold = _measure(rule, f["cores_saved"], f["estimated_gain"])
        key = f"{rule.owner}{f['rule']}:{f['function']}:{f['dso']}"
        alerts.append(Alert(key, value, threshold, _saving_payload(rule, f)))
    return alerts


def _measure(rule: AlertRule, cores: float, share: float) -> tuple[float, float]:
    """The value compared and its threshold: cores when the rule gives min_cores;
    with both thresholds, cores only count while the share threshold holds too."""
    if rule.min_cores > 0:
        passes_share = share >= rule.min_share
        return (cores if passes_share else 0.0), rule.min_cores
    return share, rule.min_share


def _saving_payload(rule: AlertRule, f: dict) -> dict:
    services = ", ".join(s["service"] for s in f["services"][:3]) or "the fleet"
    hosts = f"{f['hosts_count']} host{'s' if f['hosts_count'] != 1 else ''}"
    text = (
        f"perfsleuth [{rule.name}]: {f['title']}; fixing it would save about "
        f"{f['cores_saved']:.2f} cores ({100 * f['estimated_gain']:.1f}% of the fleet's CPU) "
        f"in {services} ({hosts}). {f['suggestion']}"
    )
    experiment = (f.get("fix") or {}).get("experiment")
    if experiment:
        text += f" Measure it: `{experiment}`"
    return {"text": text, "alert": "saving", "rule": rule.name, "finding": f}


def _regressions(
    store: FleetStore, rule: AlertRule, now: float, engine: Engine | None
) -> list[Alert]:
    if rule.label:
        a = Side(now - rule.range_s, now, _joined(rule.where, f"{rule.label}={rule.a}"))
        b = Side(now - rule.range_s, now, _joined(rule.where, f"{rule.label}={rule.b}"))
        what = f"{rule.label} {rule.a} -> {rule.b}"
    else:
        a = Side(now - 2 * rule.range_s, now - rule.range_s, rule.where)
        b = Side(now - rule.range_s, now, rule.where)
        what = "the range before -> the last range"
    doc = diff(store, a, b, n=0, engine=engine)
    seconds = rule.range_s
    alerts = []
    for row in doc["rows"]:
        if row["delta_self"] <= 0:
            continue
        cores = (row["abs_b"] - row["abs_a"]) / 1e9 / seconds
        value, threshold = _measure(rule, cores, row["delta_self"])
        key = f"{rule.owner}{row['function']}:{row['dso']}"
        text = (
            f"perfsleuth [{rule.name}]: {row['function'] or row['dso']} grew from "
            f"{100 * row['self_a']:.1f}% to {100 * row['self_b']:.1f}% of CPU time "
            f"({what}{', where ' + rule.where if rule.where else ''})"
        )
        payload = {"text": text, "alert": "regression", "rule": rule.name, "change": row}
        alerts.append(Alert(key, value, threshold, {**payload, "a": a.to_json(), "b": b.to_json()}))
    return alerts


def _joined(*filters: str) -> str:
    return ",".join(f for f in filters if f)


class State:
    """What was sent, by alert key: the value it had then; and since when its rule no
    longer produces it (a JSON file: {"sent": {key: value}, "gone": {key: unix time}})."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            doc = {}
        except (OSError, ValueError) as e:
            raise UserError(
                f"cannot read the alert state {path}: {e}; delete it to start over"
            ) from None
        if doc and "sent" not in doc:
            doc = {"sent": doc}  # the first state files: {key: value} only
        self.sent: dict[str, float] = doc.get("sent", {})
        self.gone: dict[str, float] = doc.get("gone", {})

    def news(self, alert: Alert) -> bool:
        """Above its threshold and not sent, or moved materially since it was sent."""
        before = self.sent.get(alert.key)
        if alert.value < alert.threshold * REARM:
            self.sent.pop(alert.key, None)
            return False
        if alert.value < alert.threshold:
            return False
        return before is None or abs(alert.value - before) > MATERIAL * before

    def record(self, alert: Alert) -> None:
        self.sent[alert.key] = alert.value

    def forget_gone(self, rule: AlertRule, alerts: list[Alert], now: float) -> None:
        """Forget what `rule` sent once it has not produced it for a whole range of the rule
        (the finding was fixed or left): when it comes back, it is news. Gone for less
        (flickering around a library rule's min_share, say), it is still remembered."""
        produced = {a.key for a in alerts}
        for key in [k for k in self.sent if k.startswith(rule.owner)]:
            if key in produced:
                self.gone.pop(key, None)
            elif now - self.gone.setdefault(key, now) >= rule.range_s:
                del self.sent[key], self.gone[key]

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        doc = {"sent": self.sent, "gone": self.gone}
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)


def post(url: str, payload: dict) -> str | None:
    """POST the payload as JSON; None when the webhook took it, else why not."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as resp:
            resp.read()
    except urllib.error.HTTPError as e:
        return f"{url} answered {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return f"{url} unreachable: {getattr(e, 'reason', e)}"
    return None


@dataclass
class Pass:
    """One evaluation of every rule: alerts sent, and what went wrong."""

    sent: list[Alert] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # rules without data in their range
    failed: list[str] = field(default_factory=list)  # alerts the webhook did not take


def watch_once(
    store: FleetStore,
    rules: list[AlertRule],
    webhook: str,
    state: State,
    now: float,
    engine: Engine | None = None,
) -> Pass:
    """Evaluate every rule at `now`, send what is news, remember what was sent."""
    done = Pass()
    for rule in rules:
        try:
            alerts = evaluate(store, rule, now, engine)
        except UserError as e:  # no data yet for this rule's range: the next pass may have it
            done.skipped.append(f"{rule.name}: {e}")
            continue
        state.forget_gone(rule, alerts, now)
        for alert in alerts:
            if not state.news(alert):
                continue
            problem = post(webhook, alert.payload)
            if problem:
                done.failed.append(f"{rule.name}: {problem}")
                continue
            state.record(alert)
            done.sent.append(alert)
    state.save()
    return done
