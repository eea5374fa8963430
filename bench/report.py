"""Figures from the measurements: tables (Markdown, printed and pasted into the docs), targets, JSON."""

from __future__ import annotations

import functools
import math
from typing import Any

from workflows.core.metering import DDB_READS, DDB_WRITES
from workflows.pricing import PRICE_READ_UNIT, PRICE_SQS_REQUEST, PRICE_WRITE_UNIT

from . import keys
from .scenarios import Result

BASELINE = "celery"


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def totals(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Request classes and billing units summed over counter rows.

    The client's DynamoDB reads are its polling for results (``run.result()``,
    ``AsyncResult.get()``): they depend on how a caller waits, not on the engine,
    so they are kept apart in ``client_wait_reads`` and left out of every other figure.
    Beat's reads (``beat_reads``, also counted in ``ddb_reads``) are its sweeps: one Query
    per shard of the timer, lease and schedule indexes every sweep interval, however many
    steps ran, so per step they mostly say how long the window was.
    """
    out = dict.fromkeys(("ddb_writes", "ddb_reads", "ddb_items_read", "ddb_other", "sqs_sends", "sqs_other",
                         "sqs_requests", "write_units", "read_units", "client", "requests", "client_wait_reads",
                         "beat_reads"), 0.0)
    for row in rows:
        op, n = row["operation"], row["requests"]
        if row["role"] == "client" and row["service"] == "dynamodb" and op in DDB_READS:
            out["client_wait_reads"] += n  # the caller polling for the result: depends on how it waits
            continue
        out["requests"] += n
        out["client"] += n if row["role"] == "client" else 0
        out["write_units"] += row["write_units"]
        out["read_units"] += row["read_units"]
        if row["service"] == "dynamodb":
            key = "ddb_writes" if op in DDB_WRITES else "ddb_reads" if op in DDB_READS else "ddb_other"
            out[key] += n
            out["ddb_items_read"] += row["items"] if op in DDB_READS else 0
            out["beat_reads"] += n if row["role"] == "beat" and op in DDB_READS else 0
        elif row["service"] == "sqs":
            out["sqs_requests"] += n
            out["sqs_sends" if op.startswith("SendMessage") else "sqs_other"] += n
    return out


def busy_time(result: Result) -> float | None:
    """Seconds the scenario's runs were executing: summed latencies of one-at-a-time runs,
    else from the first start to the last end."""
    lat = result.timing.latencies
    if not lat:
        return None
    return sum(lat) if result.scenario.startswith(("sequential", "history")) else max(lat)


def figures(result: Result) -> dict[str, Any]:
    """The derived figures of one measurement (per step where it makes sense)."""
    t, steps = totals(result.counts), result.steps
    fig: dict[str, Any] = {"p50": percentile(result.timing.latencies, 0.5),
                           "p95": percentile(result.timing.latencies, 0.95), "busy": busy_time(result)}
    fig["steps_per_s"] = steps / fig["busy"] if fig["busy"] else None
    fig["time"] = result.timing.wall if result.scenario == "throughput" else fig["p50"]
    if steps:
        for key, value in t.items():
            fig[f"{key}_per_step"] = value / steps
        fig["cost_per_million_steps"] = (t["write_units"] * PRICE_WRITE_UNIT + t["read_units"] * PRICE_READ_UNIT
                                         + t["sqs_requests"] * PRICE_SQS_REQUEST) / steps
    fig["totals"] = t
    return fig


def _f(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def main_table(results: list[Result]) -> str:
    """Speed and requests per step, one row per (scenario, system)."""
    base = {r.scenario: figures(r) for r in results if r.system == BASELINE and not r.error}
    lines = ["| Scenario | System | Runs | Steps | p50 s | p95 s | Steps/s | Time vs Celery | DDB writes/step "
             "| DDB reads/step | SQS sends/step | SQS other/step | $ per M steps | Note |",
             "|" + "---|" * 14]
    for r in results:
        f = figures(r)
        ratio = None
        if r.scenario in ("sequential", "sequential-inline") and base.get("sequential"):
            ratio = f["time"] / base["sequential"]["time"] if f["time"] else None
        elif r.scenario in base and f["time"] and r.system != BASELINE:
            ratio = f["time"] / base[r.scenario]["time"]
        note = (r.error or "").replace("|", "/")[:160]
        lines.append(
            f"| {r.scenario} | {r.system} | {len(r.timing.latencies)}/{r.runs} | {r.steps} | {_f(f['p50'], 3)} "
            f"| {_f(f['p95'], 3)} | {_f(f['steps_per_s'], 1)} | {_f(ratio)}{'x' if ratio else ''} "
            f"| {_f(f.get('ddb_writes_per_step'))} | {_f(f.get('ddb_reads_per_step'))} "
            f"| {_f(f.get('sqs_sends_per_step'))} | {_f(f.get('sqs_other_per_step'))} "
            f"| {_f(f.get('cost_per_million_steps'))} | {note} |")
    return "\n".join(lines)


def ops_table(results: list[Result]) -> str:
    """Requests per step by service and operation (every process), and the client's share."""
    lines = ["| Scenario | System | DynamoDB per step | SQS per step | Client share | Beat sweep reads/step (in DDB "
             "reads) | Result polling reads/step (left out) | CPU s: AWS / workers / client |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if not r.steps:
            continue
        by_op: dict[tuple[str, str], float] = {}
        for row in r.counts:
            waiting = row["role"] == "client" and row["service"] == "dynamodb" and row["operation"] in DDB_READS
            if row["service"] in ("dynamodb", "sqs") and not waiting:
                key = (row["service"], row["operation"])
                by_op[key] = by_op.get(key, 0) + row["requests"]

        def fmt(service: str, by_op: dict[tuple[str, str], float] = by_op, steps: int = r.steps) -> str:
            ops = sorted(((op, n / steps) for (s, op), n in by_op.items() if s == service), key=lambda x: -x[1])
            return ", ".join(f"{op} {v:.2f}" for op, v in ops if v >= 0.005) or "—"

        t = totals(r.counts)
        share = t["client"] / t["requests"] if t["requests"] else 0
        lines.append(f"| {r.scenario} | {r.system} | {fmt('dynamodb')} | {fmt('sqs')} | {share:.0%} "
                     f"| {t['beat_reads'] / r.steps:.2f} | {t['client_wait_reads'] / r.steps:.2f} "
                     f"| {' / '.join(f'{r.cpu.get(k, 0):.1f}' for k in ('aws', 'workers', 'client'))} |")
    return "\n".join(lines)


def _per(value: float, steps: int) -> str:
    return _f(value / steps) if steps else "—"


def history_table(results: list[Result]) -> str:
    """DynamoDB reads of one sequential run as it grows (must be linear: constant per step)."""
    lines = ["| Run | Steps | DDB read requests | Items read | Reads/step | Items read/step | All requests/step |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        if r.scenario.startswith("history"):
            t = totals(r.counts)
            per = functools.partial(_per, steps=r.steps)
            kind = "inline" if "inline" in r.scenario else "dispatched" if r.system == OURS else "dispatched, sent"
            lines.append(f"| {kind} | {r.steps_per_run} | {t['ddb_reads']:.0f} | {t['ddb_items_read']:.0f} "
                         f"| {per(t['ddb_reads'])} | {per(t['ddb_items_read'])} | {per(t['requests'])} |"
                         + (f" {r.error}" if r.error else ""))
    return "\n".join(lines)


OURS, SENT = "workflows", "workflows-sent"
MODES = {(OURS, "inline"): "inline step", (OURS, "dispatched"): "dispatched step (default: run in place)",
         (SENT, "dispatched"): "dispatched step sent as a message (in place off)"}


def targets(results: list[Result]) -> list[dict[str, Any]]:
    """Each target with its measured value and whether it was met (reported, never asserted)."""
    got = {(r.scenario, r.system): (r, figures(r)) for r in results}

    def fig(scenario: str, system: str, key: str) -> float | None:
        entry = got.get((scenario, system))
        return entry[1].get(key) if entry and not entry[0].error else None

    out: list[dict[str, Any]] = []

    def add(name: str, value: float | None, limit: float | None, ok: bool | None, unit: str = "") -> None:
        out.append({"target": name, "value": value, "limit": limit, "met": ok, "unit": unit})

    def le(v: float | None, lim: float) -> bool | None:
        return None if v is None else v <= lim + 0.005

    for kind, system, writes, sends in (("inline", OURS, 1, 0), ("dispatched", OURS, 2, 1),
                                        ("dispatched", SENT, 2, 1)):
        label, slope = marginal(results, kind, system)
        for key, lim, what in (("ddb_writes", writes, "DynamoDB write requests"), ("sqs_sends", sends, "SQS sends")):
            v = slope.get(key)
            add(f"{MODES[system, kind]}: {what} per extra step ({label})", v, lim, le(v, lim))
    chain = fig("sequential", BASELINE, "p50")
    for scenario, system, factor in (("sequential", OURS, 1.2), ("sequential", SENT, 1.2),
                                     ("sequential-inline", OURS, 1.0)):
        v = fig(scenario, system, "p50")
        ratio = v / chain if v and chain else None
        kind = "inline" if "inline" in scenario else "dispatched"
        add(f"{MODES[system, kind]}: p50 / Celery chain p50", ratio, factor,
            None if ratio is None else (ratio <= factor if factor > 1 else ratio < factor), "x")
    widest = max((r.steps_per_run for r in results if r.scenario.startswith("fan-out-")), default=0)
    ours, chord = fig(f"fan-out-{widest}", "workflows", "p50"), fig(f"fan-out-{widest}", BASELINE, "p50")
    add(f"{widest}-branch fan-out faster than the chord (s vs s)", ours, chord,
        None if ours is None or chord is None else ours < chord, "s")
    for system in (OURS, SENT):
        costs = [(r.scenario, figures(r).get("cost_per_million_steps")) for r in results
                 if r.system == system and r.steps]
        if costs:
            worst = max(costs, key=lambda c: c[1] or 0)
            add(f"$ per million steps, {system}, worst scenario ({worst[0]})", worst[1], 3.0, le(worst[1], 3.0), "$")
    for r in results:
        if r.system != "pyworkflow":
            continue
        mine, theirs = fig(r.scenario, "workflows", "time"), fig(r.scenario, "pyworkflow", "time")
        ahead = None if mine is None else (True if theirs is None else mine < theirs)
        add(f"ahead of pyworkflow-engine: {r.scenario} (s vs s)", mine, theirs, ahead, "s")
    return out


def marginal(results: list[Result], kind: str, system: str = "workflows") -> tuple[str, dict[str, float]]:
    """Requests per extra step between the shortest and the longest history run of ``kind``
    (the per-run costs of starting and ending cancel out)."""
    runs = sorted((r for r in results if r.scenario.startswith("history-") and not r.error and r.steps
                   and r.system == system and ("inline" in r.scenario) == (kind == "inline")),
                  key=lambda r: r.steps_per_run)
    if len(runs) < 2:
        return "no history runs", {}
    small, large = totals(runs[0].counts), totals(runs[-1].counts)
    span = runs[-1].steps_per_run - runs[0].steps_per_run
    label = f"history {runs[0].steps_per_run} -> {runs[-1].steps_per_run} steps"
    return label, {key: (large[key] - small[key]) / span for key in large}


def targets_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| Target | Measured | Limit | Met |", "|---|---|---|---|"]
    for row in rows:
        met = {True: "yes", False: "**no**", None: "—"}[row["met"]]
        lines.append(f"| {row['target']} | {_f(row['value'], 3)} | {_f(row['limit'], 3)} | {met} |")
    return "\n".join(lines)


def render(results: list[Result], meta: dict[str, Any]) -> str:
    """Every table, with the run's settings and machine, as Markdown."""
    head = [f"- Machine: {meta['machine']}", f"- Settings: {meta['settings']}",
            f"- Command: `{meta['command']}` at commit {meta.get('commit', 'unknown')}, started {meta['started']}"]
    return "\n\n".join(["\n".join(head), "### Speed, requests and cost per step", main_table(results),
                        "### Requests per step by operation (all processes)", ops_table(results),
                        "### History growth (one sequential run)", history_table(results),
                        "### Targets", targets_table(targets(results)), keys.section(results)])
