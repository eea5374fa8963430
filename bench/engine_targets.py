"""Issue 26's targets 3-5 (the request minimum, throughput that scales, both columns), measured.

Each row has a figure per column (``moto``, and ``aws``: moto plus AWS's latency
per operation) where the scenario was measured in it; request counts are the
same in both columns, times are not. Reported, never asserted.
"""

from __future__ import annotations

from typing import Any, Callable

from workflows.core.storage.metering import DDB_READS

from .columns import COLUMN_LABELS, split
from .report import BASELINE, OURS, SENT, _f, fan_out_widths, figures, groups, marginal, median, merged, ratio, totals
from .scenarios import FULL, Result
from .session import WIDE

Row = dict[str, Any]
WIDE_LIMIT = FULL.wide_timeout  # seconds the bench gives the wide fan-out before it reports it unfinished
Figure = Callable[[list[Result]], tuple[float | None, str]]


def _row(target: str, name: str, limit: float, op: str, by: dict[str, list[Result]], figure: Figure,
         columns: tuple[str, ...] | None = None) -> Row:
    values, notes = {}, {}
    for column in columns or tuple(by):
        if column in by:
            values[column], notes[column] = figure(by[column])
    met = {c: None if v is None else (v <= limit + 1e-9 if op == "<=" else v >= limit - 1e-9)
           for c, v in values.items()}
    return {"id": target, "target": name, "limit": limit, "op": op, "values": values, "met": met, "notes": notes}


def _ratio(group: tuple[str, str, str, int]) -> Figure:
    def figure(results: list[Result]) -> tuple[float | None, str]:
        r = ratio(results, group)
        return r.median, f"{len(r.per_repeat)} paired, {r.text()}" if r.per_repeat else "not measured"
    return figure


def _per_extra_step(kind: str, key: str, system: str = OURS) -> Figure:
    """Requests per extra step of the history runs; ``ddb_reads`` without beat's sweeps (a longer window
    holds more of them, whatever the run does)."""
    def figure(results: list[Result]) -> tuple[float | None, str]:
        label, slope = marginal(results, kind, system)
        if key == "ddb_reads" and slope:
            return slope["ddb_reads"] - slope["beat_reads"], f"{label}, beat's sweeps left out"
        return slope.get(key), label
    return figure


def _one_step(key: str) -> Figure:
    """Per run of the threads pool's burst of one-step runs (every repeat): writes, reads (beat's sweeps and
    the client's result polling left out), SQS requests, or $ per million."""
    def figure(results: list[Result]) -> tuple[float | None, str]:
        reps = groups(results).get(("throughput", OURS, "threads", 1))
        if not reps:
            return None, "not measured"
        r = merged(reps)
        runs = len(r.timing.latencies)
        if not runs:
            return None, r.error or "no run ended"
        t = totals(r.counts)
        value = {"writes": t["ddb_writes"], "reads": t["ddb_reads"] - t["beat_reads"],
                 "sqs": t["sqs_requests"]}.get(key)
        if key == "cost":
            return figures(r).get("cost_per_million_steps"), f"{runs} runs"
        return (value / runs if value is not None else None), f"{runs} runs"
    return figure


def _fan_out(results: list[Result]) -> tuple[float | None, str]:
    widths = fan_out_widths(results)
    if not widths:
        return None, "not measured"
    group = (f"fan-out-{max(widths)}", OURS, "threads", 1)
    r = ratio(results, group)
    reps = groups(results)[group]
    per_branch = totals(merged(reps).counts)["requests"] / (max(widths) * len(reps))
    return r.median, f"{max(widths)} branches, {r.text()}, {per_branch:.2f} requests/branch"


def _fan_out_reads(results: list[Result], width: int) -> dict[str, float]:
    """The workers' DynamoDB reads of one repeated fan-out of ``width`` branches, by operation, per repeat."""
    reps = groups(results)[(f"fan-out-{width}", OURS, "threads", 1)]
    out: dict[str, float] = {}
    for row in merged(reps).counts:
        if row["role"] == "worker" and row["service"] == "dynamodb" and row["operation"] in DDB_READS:
            out[row["operation"]] = out.get(row["operation"], 0.0) + row["requests"] / len(reps)
    return out


def _run_reads_per_extra_branch(results: list[Result]) -> tuple[float | None, str]:
    """Item reads (GetItem: how a run item is read) added by each branch between the narrowest and the
    widest repeated fan-out; what every fan-out reads once, whatever its width, cancels out. The fan-in's
    Query pages of the branch results are counted in the note."""
    widths = fan_out_widths(results)
    if len(widths) < 2:
        return None, "fewer than two fan-out widths"
    low, high = widths[0], widths[-1]
    reads = {w: _fan_out_reads(results, w) for w in (low, high)}
    items = {w: reads[w].get("GetItem", 0.0) + reads[w].get("BatchGetItem", 0.0) for w in (low, high)}
    return ((items[high] - items[low]) / (high - low),
            f"{low} -> {high} branches: {items[low]:.1f} -> {items[high]:.1f} GetItems per fan-out; the fan-in's "
            f"Query pages of the results {reads[low].get('Query', 0.0):.1f} -> {reads[high].get('Query', 0.0):.1f}")


def _wide_fan_out(results: list[Result]) -> tuple[float | None, str]:
    """Wall seconds of the widest one-off fan-out, with its requests per branch and the chord's."""
    ours = sorted((r for r in results if r.scenario.startswith(WIDE) and r.system == OURS),
                  key=lambda r: r.steps_per_run)
    if not ours:
        return None, "not measured"
    wide = ours[-1]
    chord = next((r for r in results if r.scenario == wide.scenario and r.system == BASELINE), None)
    per_branch = totals(wide.counts)["requests"] / wide.steps_per_run
    note = f"{wide.steps_per_run} branches, {per_branch:.2f} requests/branch"
    if wide.error or not wide.timing.latencies:  # the time it was given, over the limit: a miss
        return wide.timing.wall, f"{note}; did not complete: {wide.error}"
    if chord is not None:
        note += (f"; the chord did not complete: {chord.error}" if chord.error or not chord.timing.latencies
                 else f"; the chord {chord.timing.latencies[0]:.1f} s, "
                      f"{totals(chord.counts)['requests'] / chord.steps_per_run:.2f} requests/branch")
    return wide.timing.latencies[0], note


def _prefork_burst(results: list[Result]) -> tuple[float | None, str]:
    counts = sorted({g[3] for g in groups(results) if g[2] == "prefork" and g[0] == "throughput"})
    if not counts:
        return None, "not measured"
    return _ratio(("throughput", OURS, "prefork", counts[-1]))(results)[0], f"{counts[-1]} processes"


def runs_per_s(results: list[Result], system: str, processes: int) -> float | None:
    """Median over repeats of a prefork burst's runs per second."""
    reps = groups(results).get(("throughput", system, "prefork", processes), [])
    return median([figures(r)["steps_per_s"] for r in reps if not r.error])


def _scaling(results: list[Result]) -> tuple[float | None, str]:
    counts = sorted({g[3] for g in groups(results) if g[2] == "prefork" and g[0] == "throughput"})
    if len(counts) < 2:
        return None, f"prefork measured with {', '.join(map(str, counts)) or 'no'} process count(s) only"
    low, high = counts[0], counts[-1]
    ours = [runs_per_s(results, OURS, n) for n in (low, high)]
    base = [runs_per_s(results, BASELINE, n) for n in (low, high)]
    value = ours[1] / ours[0] if ours[0] and ours[1] else None
    return value, (f"{high} vs {low} processes: {_f(ours[1], 1)} vs {_f(ours[0], 1)} runs/s; "
                   f"Celery {_f(base[1], 1)} vs {_f(base[0], 1)}")


def _both_columns(results: list[Result]) -> tuple[float | None, str]:
    paired = [len(ratio(results, g).per_repeat) for g in groups(results)
              if g[1] not in (BASELINE, "pyworkflow") and g[0].startswith(("sequential", "throughput", "fan-out"))]
    return (float(min(paired)) if paired else None), "fewest paired repeats of a latency or burst scenario"


def engine_targets(results: list[Result]) -> list[Row]:
    """Rows for issue 26's targets 3, 4 and 5."""
    by = split(results)
    moto = ("moto",)
    return [
        _row("3", "step in place: DynamoDB writes per extra step", 1, "<=", by,
             _per_extra_step("dispatched", "ddb_writes"), moto),
        _row("3", "step in place: DynamoDB reads per extra step", 0, "<=", by,
             _per_extra_step("dispatched", "ddb_reads"), moto),
        _row("3", "inline step: DynamoDB writes per extra step", 1, "<=", by,
             _per_extra_step("inline", "ddb_writes"), moto),
        _row("3", "one-step run: DynamoDB writes per run", 3, "<=", by, _one_step("writes")),
        _row("3", "one-step run: DynamoDB reads per run (no sweeps, no result polling)", 0, "<=", by,
             _one_step("reads")),
        _row("3", "one-step run: SQS requests per run", 3, "<=", by, _one_step("sqs")),
        _row("3", "one-step run: $ per million steps", 3.0, "<=", by, _one_step("cost")),
        _row("3", "step sent as a message: p50 / chain p50", 1.2, "<=", by,
             _ratio(("sequential", SENT, "threads", 1))),
        # the record (before the send) and the cursor's move (after it): the order is not visible to the
        # counting front; tests/unit/test_request_minimum.py asserts it (1 write before the message leaves)
        _row("3", "step sent as a message: DynamoDB writes per extra step (the record before its message "
             "leaves, the cursor's move after)", 2, "<=", by, _per_extra_step("dispatched", "ddb_writes", SENT), moto),
        _row("3", "widest repeated fan-out: wall time / chord's", 0.4, "<=", by, _fan_out),
        _row("3", "fan-out branch: item reads (GetItem) per extra branch", 0, "<=", by,
             _run_reads_per_extra_branch, moto),
        _row("3", "widest one-off fan-out completes within the bench's limit: wall s", WIDE_LIMIT, "<=", by,
             _wide_fan_out, moto),
        _row("4", "burst of one-step runs, threads pool: time / Celery's", 1.0, "<=", by,
             _ratio(("throughput", OURS, "threads", 1))),
        _row("4", "burst of one-step runs, most prefork processes: time / Celery's", 1.0, "<=", by, _prefork_burst),
        _row("4", "prefork runs/s, most processes / 1 process", 2.0, ">=", by, _scaling),
        _row("5", "both columns measured: paired repeats", 2, ">=", by, _both_columns),
    ]


def engine_targets_table(rows: list[Row]) -> str:
    """The rows as Markdown, one value and verdict per column."""
    columns = [c for c in COLUMN_LABELS if any(c in r["values"] for r in rows)]
    lines = ["| # | Target | Limit | " + " | ".join(f"{COLUMN_LABELS[c]} | Met" for c in columns) + " | Note |",
             "|" + "---|" * (4 + 2 * len(columns))]
    for r in rows:
        cells = []
        for c in columns:
            met = r["met"].get(c)
            cells += [_f(r["values"].get(c), 3) if c in r["values"] else "—",
                      {True: "yes", False: "**no**", None: "—"}[met]]
        notes = "; ".join(f"{COLUMN_LABELS[c]}: {n}" if len(r["notes"]) > 1 else n
                          for c, n in r["notes"].items())
        lines.append(f"| {r['id']} | {r['target']} | {r['op']} {_f(r['limit'], 2)} | " + " | ".join(cells)
                     + f" | {notes.replace('|', '/')[:240]} |")
    return "\n".join(lines)


__all__ = ["engine_targets", "engine_targets_table", "runs_per_s"]
