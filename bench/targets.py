"""The targets of the performance issue (1-8), measured: value, limit, met or missed (reported, never asserted).

Ratios are medians over repeats of per-repeat ratios to plain Celery (see
:mod:`bench.repeats`); each row's note gives the spread or why there is no figure.
Then the older checks (requests per extra step, cost, pyworkflow-engine).
"""

from __future__ import annotations

from typing import Any

from .repeats import Ratio
from .report import (
    BASELINE,
    MODES,
    OURS,
    SENT,
    _f,
    fan_out_widths,
    figures,
    groups,
    growth,
    marginal,
    merged,
    ratio,
    totals,
)
from .scenarios import Result
from .session import WIDE

Row = dict[str, Any]
THREADS = "threads"
HOT_KEY_LIMIT = 1000.0  # DynamoDB's write units per second on one partition key
HOT_KEY_SHARE = 0.5  # the margin: under half of it


def row(target: str, name: str, value: float | None, limit: float | None, met: bool | None, op: str = "<=",
        unit: str = "", note: str = "") -> Row:
    return {"id": target, "target": name, "value": value, "limit": limit, "op": op, "met": met, "unit": unit,
            "note": note}


def at_most(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit + 1e-9


def ratio_row(results: list[Result], target: str, name: str, group: tuple[str, str, str, int], limit: float) -> Row:
    r = ratio(results, group)
    spread = f"{len(r.per_repeat)} paired repeat(s), {r.text()}" if r.per_repeat else "not measured"
    return row(target, name, r.median, limit, at_most(r.median, limit), unit="x", note=spread)


def trusted_ratios(results: list[Result]) -> Row:
    """Target 1: every repeated scenario has at least two repeats paired with Celery's (alternating turns)."""
    paired = {g: len(ratio(results, g).per_repeat) for g in groups(results)
              if g[1] != BASELINE and g[1] != "pyworkflow" and not g[0].startswith("history")
              and not g[0].startswith(WIDE)}
    fewest = min(paired.values(), default=None)
    note = ", ".join(sorted({f"{g[0]}/{g[1]}/{g[2]}-{g[3]}: {n}" for g, n in paired.items() if n < 2})) or \
        "every latency scenario"
    return row("1", "Ratios from repeats in alternating order: fewest paired repeats of a scenario", fewest, 2,
               None if fewest is None else fewest >= 2, ">=", "repeats", note)


def wide_scenarios(results: list[Result]) -> list[str]:
    """The wide fan-outs (measured once, not repeated)."""
    return sorted({r.scenario for r in results if r.scenario.startswith(WIDE)})


def flat_cost(results: list[Result]) -> list[Row]:
    """Target 3: worker CPU and latency per step of the longest history run within 1.5x the shortest's."""
    out = []
    for kind in ("dispatched", "inline"):
        g = growth(results, kind)
        for key, what in (("cpu", "worker CPU s"), ("latency", "latency")):
            if g is None:
                out.append(row("3", f"{kind} steps: {what} per step, long run / short run", None, 1.5, None,
                               unit="x", note="no history runs"))
                continue
            value = g[f"{key}_ratio"]
            note = (f"{g['large']} vs {g['small']} steps: {_f(g[f'{key}_large'], 4)} vs {_f(g[f'{key}_small'], 4)} "
                    f"s/step")
            if not g["completed"]:
                note += f"; the {g['large']}-step run did not finish: {g['error']}"
            out.append(row("3", f"{kind} steps: {what} per step, {g['large']} / {g['small']} steps", value, 1.5,
                           at_most(value, 1.5) and g["completed"], unit="x", note=note))
    return out


def single_step(results: list[Result]) -> list[Row]:
    """Target 4: single-step runs' cost, and the burst's time against Celery's."""
    reps = groups(results).get(("throughput", OURS, THREADS, 1))
    cost = figures(merged(reps)).get("cost_per_million_steps") if reps else None
    return [row("4", "single-step runs: $ per million steps (throughput)", cost, 3.0, at_most(cost, 3.0), unit="$"),
            ratio_row(results, "4", "burst of single-step runs: time / Celery's", ("throughput", OURS, THREADS, 1),
                      1.0)]


def wide_fan_out(results: list[Result]) -> list[Row]:
    """Target 6: the repeated widest fan-out against the chord, and the wide one completes."""
    repeated = fan_out_widths(results)
    out = []
    if repeated:
        width = max(repeated)
        out.append(ratio_row(results, "6", f"{width}-branch fan-out: wall time / chord's",
                             (f"fan-out-{width}", OURS, THREADS, 1), 0.4))
    for scenario in wide_scenarios(results):
        by = {r.system: r for r in results if r.scenario == scenario and r.pool == THREADS}
        ours, chord = by.get(OURS), by.get(BASELINE)
        if ours is None:
            continue
        wall = ours.timing.latencies[0] if ours.timing.latencies else None
        per_branch = totals(ours.counts)["requests"] / ours.steps_per_run
        if chord is None:
            chord_note = "chord not run"
        elif chord.error:
            chord_note = f"chord did not complete: {chord.error}"
        else:
            chord_requests = totals(chord.counts)["requests"] / chord.steps_per_run
            chord_note = f"chord {chord.timing.latencies[0]:.1f} s, {chord_requests:.2f} requests/branch"
        out.append(row("6", f"{ours.steps_per_run}-branch fan-out completes (wall s)", wall, None,
                       not ours.error, op="", unit="s",
                       note=f"{per_branch:.2f} requests/branch; {chord_note}"
                       + (f"; {ours.error}" if ours.error else "")))
    return out


def prefork(results: list[Result]) -> list[Row]:
    """Target 7: sequential and throughput with the prefork pool, each process count, both systems."""
    out = []
    counts = sorted({g[3] for g in groups(results) if g[2] == "prefork"})
    for n in counts:
        seq = ratio(results, ("sequential", OURS, "prefork", n))
        burst = ratio(results, ("throughput", OURS, "prefork", n))
        measured = all(groups(results).get((s, system, "prefork", n)) for s in ("sequential", "throughput")
                       for system in (OURS, BASELINE))
        out.append(row("7", f"prefork, {n} process(es): sequential p50 / Celery's", seq.median, None, measured,
                       op="", unit="x", note=f"sequential {seq.text()}, throughput {burst.text()}"))
    if not counts:
        out.append(row("7", "prefork pool: sequential and throughput", None, None, None, note="not measured"))
    return out


def hot_key_target(hot_keys: list[dict[str, Any]] | None) -> Row:
    """Target 8, filled from the counting front's per-key write counts (the ``hot_keys`` of a window).

    Each entry is read as ``{"key": ..., "writes_per_second": ...}``; the row gives the hottest
    key's measured rate against half of DynamoDB's per-key write limit. The rates at internet
    scale are extrapolated in docs/capacity.md (``python -m bench.capacity``).
    """
    if not hot_keys:
        return row("8", "hottest partition key: writes/s (measured)", None, HOT_KEY_LIMIT * HOT_KEY_SHARE, None,
                   unit="/s", note="not measured (the counting front reports no hot_keys)")
    hottest = max(hot_keys, key=lambda k: float(k.get("writes_per_second") or 0))
    value = float(hottest.get("writes_per_second") or 0)
    return row("8", "hottest partition key: writes/s (measured)", value, HOT_KEY_LIMIT * HOT_KEY_SHARE,
               at_most(value, HOT_KEY_LIMIT * HOT_KEY_SHARE), unit="/s", note=f"key {hottest.get('key')}")


def hot_keys_of(results: list[Result]) -> list[dict[str, Any]] | None:
    """Every window's hot keys, or None where the counting front reported none."""
    from .keys import hot_keys_of as front_hot_keys

    found = [key for r in results for key in (r.hot_keys or [])]
    for r in results:  # the counting front's per-key counts, kept in the window's counter rows
        hot = front_hot_keys(r.counts) if r.counts else None
        found += [{"key": f"{e['table']} {e['key']}", "writes_per_second": e["units_per_s"]}
                  for e in (hot or {}).get("top", [])]
    return found or None


def other_checks(results: list[Result]) -> list[Row]:
    """Requests per extra step, cost per scenario, and pyworkflow-engine (older targets)."""
    out = []
    for kind, system, writes, sends in (("inline", OURS, 1, 0), ("dispatched", OURS, 2, 1),
                                        ("dispatched", SENT, 2, 1)):
        label, slope = marginal(results, kind, system)
        for key, lim, what in (("ddb_writes", writes, "DynamoDB write requests"), ("sqs_sends", sends, "SQS sends")):
            v = slope.get(key)
            out.append(row("", f"{MODES[system, kind]}: {what} per extra step ({label})", v, lim,
                           at_most(v, lim + 0.005)))
    mine = {g[0]: figures(merged(reps)) for g, reps in groups(results).items() if g[1:] == (OURS, THREADS, 1)}
    for group, reps in groups(results).items():
        if group[1] == "pyworkflow":
            theirs = figures(merged(reps)).get("p50") if not merged(reps).error else None
            ours = mine.get(group[0], {}).get("p50")
            ahead = None if ours is None else (True if theirs is None else ours < theirs)
            out.append(row("", f"ahead of pyworkflow-engine: {group[0]} (p50 s vs s)", ours, theirs, ahead, "<",
                           "s"))
    return out


def targets(results: list[Result]) -> list[Row]:
    """Rows for targets 1-8, then the older checks."""
    seq = ("sequential", OURS, THREADS, 1)
    return [trusted_ratios(results),
            ratio_row(results, "2", "steps in place: p50 / Celery chain p50", seq, 0.5),
            ratio_row(results, "2", "inline steps: p50 / Celery chain p50", ("sequential-inline", OURS, THREADS, 1),
                      0.25),
            *flat_cost(results), *single_step(results),
            ratio_row(results, "5", "steps sent as messages: p50 / Celery chain p50", ("sequential", SENT, THREADS, 1),
                      1.2),
            *wide_fan_out(results), *prefork(results), hot_key_target(hot_keys_of(results)),
            *other_checks(results)]


def targets_table(rows: list[Row]) -> str:
    """The rows as Markdown: target, measured, limit, met, note."""
    lines = ["| # | Target | Measured | Limit | Met | Note |", "|---|---|---|---|---|---|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "—"}[r["met"]]
        limit = f"{r['op']} {_f(r['limit'], 3)}".strip() if r["limit"] is not None else "—"
        lines.append(f"| {r['id']} | {r['target']} | {_f(r['value'], 3)} | {limit} | {met} "
                     f"| {str(r['note']).replace('|', '/')[:200]} |")
    return "\n".join(lines)


__all__ = ["Ratio", "hot_key_target", "targets", "targets_table"]
