"""The two columns side by side, and where a window's DynamoDB time went.

Every repeated scenario is measured twice per repeat: on moto as it is, and with
the counting front adding AWS's latency per operation (:mod:`bench.aws_latency`).
Each column's ratios pair repeats of that column only. The second table splits
each window's DynamoDB requests into the time they waited for their turn at the
front, were served by moto, and slept for AWS's latency, with the emulator's CPU
over the window's wall time (1.0: moto was the bottleneck) and the items its
tables held.
"""

from __future__ import annotations

from typing import Any

from .report import _f, figures, groups, median, merged, ratio
from .scenarios import Result

COLUMN_LABELS = {"moto": "moto", "aws": "moto + AWS latency"}
WAIT_SCENARIOS = ("sequential", "sequential-inline", "throughput")


def split(results: list[Result]) -> dict[str, list[Result]]:
    """The results of each column (``moto`` first), the ``start`` failures in every column."""
    starts = [r for r in results if r.scenario == "start"]
    out: dict[str, list[Result]] = {}
    for column in sorted({r.column for r in results if r.scenario != "start"}, key=lambda c: c != "moto"):
        out[column] = starts + [r for r in results if r.column == column and r.scenario != "start"]
    return out or {"moto": starts}


def side_by_side(results: list[Result]) -> str:
    """Per repeated scenario and system: the median time (p50, or wall time of a burst or fan-out) and
    the time vs Celery in each column."""
    by = split(results)
    names = list(by)
    head = "| Scenario | System | Pool | Processes | " + " | ".join(
        f"{COLUMN_LABELS.get(c, c)}: time s | {COLUMN_LABELS.get(c, c)}: vs Celery" for c in names) + " |"
    lines = [head, "|" + "---|" * (4 + 2 * len(names))]
    keys: list[Any] = []
    for column in names:
        keys += [g for g in groups(by[column]) if g not in keys]
    for group in keys:
        cells = []
        for column in names:
            repeats = groups(by[column]).get(group, [])
            times = [figures(r)["time"] for r in repeats if not r.error]
            cells += [_f(median(times), 3), ratio(by[column], group).text() if repeats else "—"]
        lines.append(f"| {group[0]} | {group[1]} | {group[2]} | {group[3]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ddb_time(result: Result) -> dict[str, float]:
    """A window's DynamoDB requests (the client's result polling included: it takes turns too) and their
    summed seconds waiting for the turn, served by moto, holding the turn (served plus the front's sizing
    of writes; 0 in runs before it was counted), and slept for AWS's latency."""
    out = dict.fromkeys(("requests", "wait", "served", "held", "added"), 0.0)
    for row in result.counts:
        if row.get("service") == "dynamodb" and row.get("operation") != "hot_keys":
            out["requests"] += row["requests"]
            out["wait"] += row.get("wait_seconds", 0.0)
            out["served"] += row.get("seconds", 0.0)
            out["held"] += row.get("held_seconds", 0.0)
            out["added"] += row.get("added_seconds", 0.0)
    return out


def op_ms(result: Result, operation: str, role: str | None = None) -> float | None:
    """Mean milliseconds moto served one DynamoDB ``operation`` (of ``role``, if given) in a window."""
    rows = [r for r in result.counts if r.get("service") == "dynamodb" and r.get("operation") == operation
            and (role is None or r.get("role") == role)]
    n = sum(r["requests"] for r in rows)
    return 1000 * sum(r.get("seconds", 0.0) for r in rows) / n if n else None


def waits_table(results: list[Result]) -> str:
    """Where the DynamoDB time of the sequential and burst windows went, per column (all repeats)."""
    lines = ["| Scenario | System | Pool | Processes | Column | Table items | Wall s | DDB requests/run "
             "| Served ms/request | Turn held ms/request | Wait for turn ms/request | Added ms/request "
             "| Moto serving DDB / wall "
             "| AWS-process CPU / wall | UpdateItem ms | beat's Query ms |", "|" + "---|" * 16]
    for group, repeats in groups(results).items():
        if group[0] not in WAIT_SCENARIOS:
            continue
        for column in sorted({r.column for r in repeats}, key=lambda c: c != "moto"):
            mine = [r for r in repeats if r.column == column]
            r = merged(mine)
            t = ddb_time(r)
            runs = len(r.timing.latencies)
            wall = sum(x.timing.wall for x in mine)
            per = t["requests"] or 1.0
            per_run = t["requests"] / runs if runs else None
            lines.append(
                f"| {group[0]} | {group[1]} | {group[2]} | {group[3]} | {COLUMN_LABELS.get(column, column)} "
                f"| {max(x.table_items for x in mine)} | {_f(wall, 1)} | {_f(per_run, 1)} "
                f"| {_f(1000 * t['served'] / per, 2)} | {_f(1000 * t['held'] / per, 2)} "
                f"| {_f(1000 * t['wait'] / per, 2)} "
                f"| {_f(1000 * t['added'] / per, 2)} | {_f(t['served'] / wall if wall else None)} "
                f"| {_f(r.cpu.get('aws', 0.0) / wall if wall else None)} | {_f(op_ms(r, 'UpdateItem'), 1)} "
                f"| {_f(op_ms(r, 'Query', 'beat'), 1)} |")
    return "\n".join(lines)


__all__ = ["COLUMN_LABELS", "ddb_time", "op_ms", "side_by_side", "split", "waits_table"]
