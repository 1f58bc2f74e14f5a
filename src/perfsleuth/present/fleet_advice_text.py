"""`fleet diff`, `fleet series`, `fleet advise` and `fleet libraries` as text."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .fleet_text import utc, value_column
from .output import cell, pct

BAR_WIDTH = 40


def _table(title: str) -> Table:
    return Table(title=title, title_justify="left", box=None, header_style="bold", pad_edge=False)


def _side(side: dict) -> str:
    where = f" where {side['where']}" if side["where"] else ""
    return f"{utc(side['from'])} .. {utc(side['to'])}{where}"


def render_diff(doc: dict, console: Console) -> None:
    console.print(Text(f"A: {_side(doc['a'])}\nB: {_side(doc['b'])}"))
    table = _table(f"shares of each side's CPU time, by {doc['by']}, largest changes first")
    for col in ("self A", "self B", "Δ self", "total A", "total B", "Δ total"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column(doc["by"], overflow="fold")
    for r in doc["rows"]:
        name = r["function"] or r["file"] or r["dso"]
        table.add_row(
            pct(r["self_a"]),
            pct(r["self_b"]),
            f"{100 * r['delta_self']:+7.2f}%",
            pct(r["total_a"]),
            pct(r["total_b"]),
            f"{100 * r['delta_total']:+7.2f}%",
            cell(name),
        )
    console.print(table)


def render_series(doc: dict, console: Console) -> None:
    where = f" where {doc['where']}" if doc["where"] else ""
    header, scale = value_column(doc)
    what = "CPU time" if header == "CPU s" else doc.get("type", "")
    table = _table(f"{doc['function']}: share of the fleet's {what} per {doc['step']:g} s{where}")
    for col in ("from", "self", "total", header):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    peak = max(p["total"] for p in doc["points"]) or 1.0
    for p in doc["points"]:
        bar = "█" * round(BAR_WIDTH * p["total"] / peak)
        table.add_row(
            utc(p["from"]), pct(p["self"]), pct(p["total"]), f"{p['cpu_ns'] / scale:,.0f}", bar
        )
    console.print(table)


def render_advice(doc: dict, console: Console) -> None:
    where = f" where {doc['where']}" if doc["where"] else ""
    title = (
        f"fleet {utc(doc['from'])} .. {utc(doc['to'])}{where}: {doc['cores']:.2f} cores busy "
        f"on average; {len(doc['findings'])} finding(s) by cores saved"
    )
    money = any("money_per_month" in f for f in doc["findings"])
    table = _table(title)
    for col in ("#", "cores saved", *(["per month"] if money else []), "share", "finding"):
        table.add_column(
            col, justify="right" if col != "finding" else "left", no_wrap=col != "finding"
        )
    table.add_column("services", overflow="fold")
    for n, f in enumerate(doc["findings"], 1):
        services = ", ".join(f"{s['service']} {100 * s['share']:.0f}%" for s in f["services"][:3])
        cost = [f"{f['money_per_month']:,.0f}"] if money else []
        table.add_row(
            str(n),
            f"{f['cores_saved']:.2f}{'*' if 'verified' in f else ''}",
            *cost,
            pct(f["share"]),
            cell(f["title"]),
            cell(services),
        )
    console.print(table)
    for n, f in enumerate(doc["findings"], 1):
        console.print(Text("\n".join(_details(n, f))))
    for note in doc["notes"]:
        console.print(Text(f"note: {note}"))


def _details(n: int, f: dict) -> list[str]:
    hosts = ", ".join(h["host"] for h in f["hosts"][:5])
    more = f" and {f['hosts_count'] - 5} more" if f["hosts_count"] > 5 else ""
    lines = [
        f"\n{n}. [{f['rule']}] {f['title']}",
        f"   on {f['hosts_count']} host(s): {hosts}{more}",
    ]
    lines += [f"   - {e}" for e in f["evidence"]]
    lines.append(f"   fix: {f['suggestion']}")
    fix = f.get("fix") or {}
    for key in ("command", "experiment"):
        if fix.get(key):
            lines.append(f"   {'run' if key == 'command' else 'measure'}: {fix[key]}")
    if f.get("verified"):
        lines += _measured(f)
    elif fix.get("experiment"):
        lines.append("   attach: add --format json -o FILE, then `fleet advise --verified FILE`")
    if f.get("same_hot_spot"):
        lines.append(f"   same hot spot as {f['same_hot_spot']}")
    return lines


def _measured(f: dict) -> list[str]:
    v = f["verified"]
    rest = f["cores_saved"] - v["cores_saved"]
    return [
        f"   measured ({v['file']}): {v['summary']}",
        f"   * {f['cores_saved']:.2f} cores saved: {v['cores_saved']:.2f} measured in "
        f"{v['program']} (of the {v['program_cores']:.2f} cores it keeps busy) + {rest:.2f} "
        f"estimated elsewhere; the estimate alone was {f['estimated_cores_saved']:.2f}",
    ]


def render_libraries(doc: dict, console: Console) -> None:
    if not doc["windows"]:
        console.print(
            "no window in this range lists its processes' libraries: the agents must send them"
        )
        return
    table = _table(f"replaceable libraries loaded in {doc['windows']:,} window(s), hottest first")
    for col in ("share", "hot", "library", "rule", "hosts", "services", "replacement"):
        table.add_column(
            col, justify="right" if col in ("share", "hosts") else "left", overflow="fold"
        )
    for r in doc["libraries"]:
        table.add_row(
            pct(r["share"]),
            "yes" if r["hot"] else "",
            cell(r["library"]),
            r["rule"],
            str(len(r["hosts"])),
            cell(", ".join(r["services"])),
            cell(r["replacement"]),
        )
    console.print(table)
