"""Figures from the measurements: tables (Markdown, printed and pasted into the docs), targets, JSON."""

from __future__ import annotations

import functools
import math
from typing import Any, Iterable

from workflows.core.model.pricing import PRICE_READ_UNIT, PRICE_SQS_REQUEST, PRICE_WRITE_UNIT
from workflows.core.storage.metering import DDB_READS, DDB_WRITES

from . import keys
from .repeats import Ratio, median, paired_ratio
from .scenarios import Result

BASELINE = "celery"
Group = tuple[str, str, str, int]  # scenario, system, pool, processes
OURS, SENT = "workflows", "workflows-sent"
MODES = {(OURS, "inline"): "inline step", (OURS, "dispatched"): "dispatched step (default: run in place)",
         (SENT, "dispatched"): "dispatched step sent as a message (in place off)"}


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


def groups(results: Iterable[Result]) -> dict[Group, list[Result]]:
    """The repeats of each (scenario, system, pool, processes), in the order first measured."""
    out: dict[Group, list[Result]] = {}
    for r in results:
        if r.scenario != "start":
            out.setdefault((r.scenario, *r.variant), []).append(r)
    return out


def merged(repeats: list[Result]) -> Result:
    """The repeats of one group as one result (latencies, counters and CPU pooled): per-step request
    figures are then over every repeat's steps."""
    first = repeats[0]
    out = Result(first.scenario, first.system, first.steps_per_run, sum(r.runs for r in repeats),
                 pool=first.pool, processes=first.processes,
                 error=next((r.error for r in repeats if r.error), None))
    for r in repeats:
        out.timing.latencies += r.timing.latencies
        out.timing.errors += r.timing.errors
        out.timing.wall += r.timing.wall
        out.counts += r.counts
        for side, seconds in r.cpu.items():
            out.cpu[side] = round(out.cpu.get(side, 0.0) + seconds, 2)
        if r.timing.steps_done is not None:
            out.timing.steps_done = (out.timing.steps_done or 0) + r.timing.steps_done
    return out


def base_scenario(scenario: str) -> str:
    """What a scenario is compared with: inline runs with the chain, others with the same scenario."""
    return "sequential" if scenario == "sequential-inline" else scenario


def ratio(results: list[Result], group: Group, key: str = "time") -> Ratio:
    """A group's figure over plain Celery's, repeat by repeat (the same pool and processes)."""
    scenario, system, pool, processes = group
    by_group = groups(results)
    ours = {r.repeat: None if r.error else figures(r)[key] for r in by_group.get(group, [])}
    base = {r.repeat: None if r.error else figures(r)[key]
            for r in by_group.get((base_scenario(scenario), BASELINE, pool, processes), [])}
    return paired_ratio(ours, base) if system != BASELINE else Ratio(())


def summary(results: list[Result]) -> list[dict[str, Any]]:
    """Per group: repeats, the median over repeats of p50, time and steps/s, and the ratio to Celery."""
    out = []
    for group, repeats in groups(results).items():
        figs = [figures(r) for r in repeats if not r.error]
        out.append({"scenario": group[0], "system": group[1], "pool": group[2], "processes": group[3],
                    "repeats": len(repeats), "failed_repeats": sum(1 for r in repeats if r.error),
                    **{f"median_{k}": median([f[k] for f in figs]) for k in ("p50", "p95", "time", "steps_per_s")},
                    "vs_celery": ratio(results, group).to_json()})
    return out


def main_table(results: list[Result]) -> str:
    """Speed and requests per step, one row per (scenario, system) of the threads pool: p50 and steps/s are
    medians over repeats, the time vs Celery the median of the per-repeat ratios (min-max)."""
    lines = ["| Scenario | System | Repeats | Runs | Steps | p50 s | p95 s | Steps/s | Time vs Celery "
             "| DDB writes/step | DDB reads/step | SQS sends/step | SQS other/step | $ per M steps | Note |",
             "|" + "---|" * 15]
    for group, repeats in groups(results).items():
        if group[2] != "threads":
            continue
        r, figs = merged(repeats), [figures(x) for x in repeats if not x.error]
        f = figures(r)
        note = (r.error or "").replace("|", "/")[:160]
        lines.append(
            f"| {group[0]} | {group[1]} | {len(repeats)} | {len(r.timing.latencies)}/{r.runs} | {r.steps} "
            f"| {_f(median([x['p50'] for x in figs]), 3)} | {_f(median([x['p95'] for x in figs]), 3)} "
            f"| {_f(median([x['steps_per_s'] for x in figs]), 1)} | {ratio(results, group).text()} "
            f"| {_f(f.get('ddb_writes_per_step'))} | {_f(f.get('ddb_reads_per_step'))} "
            f"| {_f(f.get('sqs_sends_per_step'))} | {_f(f.get('sqs_other_per_step'))} "
            f"| {_f(f.get('cost_per_million_steps'))} | {note} |")
    return "\n".join(lines)


def pool_table(results: list[Result]) -> str:
    """Sequential and throughput by pool and processes (medians over repeats, ratios to Celery's same setup)."""
    lines = ["| Scenario | System | Pool | Processes | Repeats | p50 s | Steps/s | Time vs Celery | Worker CPU s/step "
             "| Note |", "|" + "---|" * 10]
    rows = sorted((g for g in groups(results) if g[0] in ("sequential", "throughput") and g[1] in (OURS, BASELINE)),
                  key=lambda g: (g[0], g[2] != "threads", g[3], g[1] == BASELINE))
    for group in rows:
        repeats = groups(results)[group]
        r, figs = merged(repeats), [figures(x) for x in repeats if not x.error]
        threads = " worker(s) of threads" if group[2] == "threads" else ""
        lines.append(f"| {group[0]} | {group[1]} | {group[2]} | {group[3]}{threads} | {len(repeats)} "
                     f"| {_f(median([x['p50'] for x in figs]), 3)} | {_f(median([x['steps_per_s'] for x in figs]), 1)} "
                     f"| {ratio(results, group).text()} | {_per(r.cpu.get('workers', 0.0), r.steps, 4)} "
                     f"| {(r.error or '').replace('|', '/')[:120]} |")
    return "\n".join(lines)


def ops_table(results: list[Result]) -> str:
    """Requests per step by service and operation (every process), and the client's share."""
    lines = ["| Scenario | System | DynamoDB per step | SQS per step | Client share | Beat sweep reads/step (in DDB "
             "reads) | Result polling reads/step (left out) | CPU s: AWS / workers / client |",
             "|---|---|---|---|---|---|---|---|"]
    for repeats in groups(results).values():
        r = merged(repeats)
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
        lines.append(f"| {r.scenario}{'' if r.pool == 'threads' else f' ({r.pool} {r.processes})'} | {r.system} "
                     f"| {fmt('dynamodb')} | {fmt('sqs')} | {share:.0%} "
                     f"| {t['beat_reads'] / r.steps:.2f} | {t['client_wait_reads'] / r.steps:.2f} "
                     f"| {' / '.join(f'{r.cpu.get(k, 0):.1f}' for k in ('aws', 'workers', 'client'))} |")
    return "\n".join(lines)


def _per(value: float, steps: int, digits: int = 2) -> str:
    return _f(value / steps, digits) if steps else "—"


def history_kind(r: Result) -> str:
    return "inline" if "inline" in r.scenario else "dispatched" if r.system == OURS else "dispatched, sent"


def per_step(r: Result) -> dict[str, float | None]:
    """A history run's worker CPU seconds and latency per step (a run given up: over the steps it did)."""
    steps = r.steps
    wall = r.timing.latencies[0] if r.timing.latencies else r.timing.wall
    return {"cpu": r.cpu.get("workers", 0.0) / steps if steps else None, "latency": wall / steps if steps else None}


def growth(results: list[Result], kind: str) -> dict[str, Any] | None:
    """The longest history run of ``kind`` against the shortest: per-step CPU and latency, and their ratios."""
    runs = sorted((r for r in results if r.scenario.startswith("history") and history_kind(r) == kind),
                  key=lambda r: r.steps_per_run)
    if len(runs) < 2:
        return None
    small, large = per_step(runs[0]), per_step(runs[-1])
    out: dict[str, Any] = {"small": runs[0].steps_per_run, "large": runs[-1].steps_per_run,
                           "completed": not runs[-1].error, "steps_done": runs[-1].steps, "error": runs[-1].error}
    for key in ("cpu", "latency"):
        low, high = small[key], large[key]
        out[f"{key}_small"], out[f"{key}_large"] = low, high
        out[f"{key}_ratio"] = high / low if high is not None and low else None
    return out


def history_table(results: list[Result]) -> str:
    """One sequential run as it grows: reads (must stay constant per step), worker CPU and latency per step."""
    lines = ["| Run | Steps | Steps done | DDB read requests | Items read | Reads/step | All requests/step "
             "| Worker CPU ms/step | Latency ms/step | Note |", "|" + "---|" * 10]
    for r in results:
        if r.scenario.startswith("history"):
            t, ps = totals(r.counts), per_step(r)
            per = functools.partial(_per, steps=r.steps)
            ms = {k: None if v is None else v * 1000 for k, v in ps.items()}
            lines.append(f"| {history_kind(r)} | {r.steps_per_run} | {r.steps} | {t['ddb_reads']:.0f} "
                         f"| {t['ddb_items_read']:.0f} | {per(t['ddb_reads'])} | {per(t['requests'])} "
                         f"| {_f(ms['cpu'])} | {_f(ms['latency'])} | {(r.error or '').replace('|', '/')[:120]} |")
    for kind in ("dispatched", "inline"):
        g = growth(results, kind)
        if g:
            lines.append(f"\n{kind}: {g['large']} steps vs {g['small']}: worker CPU per step "
                         f"{_f(g['cpu_ratio'])}x, latency per step {_f(g['latency_ratio'])}x"
                         + ("" if g["completed"] else f" (the long run did not finish: {g['error']})"))
    return "\n".join(lines)


def wide_table(results: list[Result]) -> str:
    """The wide fan-out, each system once: wall time and requests per branch."""
    lines = ["| System | Branches | Wall s | Requests/branch | DDB writes/branch | DDB reads/branch "
             "| SQS requests/branch | Note |", "|" + "---|" * 8]
    for r in results:
        if r.scenario.startswith("wide-fan-out-"):
            t, steps = totals(r.counts), r.steps_per_run
            lines.append(f"| {r.system} | {steps} | {_f(r.timing.latencies[0] if r.timing.latencies else None, 1)} "
                         f"| {_per(t['requests'], steps)} | {_per(t['ddb_writes'], steps)} "
                         f"| {_per(t['ddb_reads'], steps)} | {_per(t['sqs_requests'], steps)} "
                         f"| {(r.error or '').replace('|', '/')[:160]} |")
    return "\n".join(lines)


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


def fan_out_widths(results: list[Result], system: str = OURS) -> list[int]:
    """The widths of the repeated fan-outs ``system`` was measured on, narrowest first."""
    return sorted({int(g[0].rsplit("-", 1)[1]) for g in groups(results) if g[0].startswith("fan-out-")
                   and g[1] == system})


def render(results: list[Result], meta: dict[str, Any], target_rows: str, extra: list[str] | None = None) -> str:
    """Every table, with the run's settings and machine, as Markdown (``target_rows``: the targets table;
    ``extra``: more sections, after it)."""
    head = [f"- Machine: {meta['machine']}", f"- Settings: {meta['settings']}",
            f"- Command: `{meta['command']}` at commit {meta.get('commit', 'unknown')}, started {meta['started']}",
            f"- Phases (s): {meta.get('phases', {})}"]
    if meta.get("interrupted"):
        head.append(f"- **Interrupted** {meta['interrupted']}: the tables hold the measurements taken until then")
    head += [f"- **{r.system} ({r.pool}, {r.processes}) did not start**: {r.error}" for r in results
             if r.scenario == "start"]
    sections = ["\n".join(head), "### Targets", target_rows, *(extra or []),
                "### Speed, requests and cost per step (threads pool; medians over repeats, ratios min-max)",
                main_table(results), "### Pools: threads and prefork", pool_table(results),
                "### Requests per step by operation (all processes, every repeat)", ops_table(results),
                "### History growth (one sequential run)", history_table(results)]
    if any(r.scenario.startswith("wide-fan-out-") for r in results):
        sections += ["### Wide fan-out (once per system)", wide_table(results)]
    sections.append(keys.section(results))
    return "\n\n".join(sections)
