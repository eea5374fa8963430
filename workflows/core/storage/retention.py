"""Retention: when an ended run's items expire, and the sweeps that stamp them.

An ended run keeps its items for ``WORKFLOWS_RETENTION`` after its end; then DynamoDB's
TTL deletes them. The end sets the run item's TTL (``retain_until = ended_at + retention``)
and puts the run in a sparse, sharded retention index, in the same write that ends it. Beat's
sweep Queries that index for runs that ended more than a lease ago and stamps each of their
items with the same TTL (``Store.retain_run``, idempotent), then takes the run out of the
index. A sweep that dies half-way leaves the run in the index: the next one stamps again.

The items a run writes per step (its history and join items) and those others write for it
(signals) are written already expiring (:func:`expiring`): ``retain_until = write time +
retention + horizon``. The sweep skips an item whose TTL is already at least the run's, so a
run that ends within the horizon of its items' writes costs no stamp per step, and one with
nothing written without a TTL does not enter the index at all (:func:`needs_sweep`). A live
run's items are kept alive: beat's keep-alive pass (:func:`keep_runs_alive`) reads every live
run (the listing index) and pushes out again the items' TTL of those not kept alive for half a
horizon (``Store.keep_run_alive``), and of the first run of each live continue-as-new chain,
reached through the chain's live run. The run item of a live run carries no TTL.

Before its items, the sweep marks the run's payload objects ended (:func:`mark_payloads_ended`):
every object under the run's prefix, found by listing it, is copied onto itself with the ended
tag, which the bucket's lifecycle rule filters on, and which S3 counts as the object's last
write, so the rule deletes it ``payload_expiry_days`` (at least the retention) after the mark:
never before the run's items. A live run's objects carry no tag, so they never expire.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ...settings import Settings
from ..model.records import RunRecord
from ..model.states import LIVE, OpKind, RunStatus
from .aws_actions import PLAN_OPS, aws_actions
from .payloads import run_prefix
from .plans import Plan, Put, Set, Update, path

if TYPE_CHECKING:
    from ..engine import Engine

#: The tables whose items are written already expiring and kept alive while their run lives: what a run
#: writes per step (history, joins), and what others write for it (signals and update requests).
EXPIRING_TABLES = frozenset({"history", "joins", "signals"})
#: Ops whose items are written without a TTL (a hook's token item and timer, a tag's index items).
UNEXPIRING_OPS = frozenset({OpKind.HOOK.value, OpKind.TAGS.value})
#: The statuses the keep-alive pass lists: the live ones (a live chain's first run is reached through its live run).
KEPT_STATUSES = tuple(sorted(LIVE))

log = logging.getLogger("workflows.retention")


def retain_until(ended_at: float, settings: Settings) -> int | None:
    """The TTL (epoch seconds, rounded up) of an ended run's items; None when retention is off."""
    if settings.retention is None:
        return None
    return -int(-(ended_at + settings.retention) // 1)


def write_expiry(now: float, settings: Settings) -> int | None:
    """The TTL an item written at ``now`` starts with: ``now + retention + horizon`` (None: retention is off)."""
    if settings.retention is None:
        return None
    return -int(-(now + settings.retention + settings.retention_horizon) // 1)


@aws_actions(elsewhere=PLAN_OPS)
def expiring(plan: Plan, until: int | None) -> Plan:
    """``plan`` with ``retain_until = until`` on each put or update of an :data:`EXPIRING_TABLES` item
    that does not set its TTL itself (a later write pushes an item's TTL out, never in)."""
    if until is None or not any(isinstance(op, (Put, Update)) and op.table in EXPIRING_TABLES for op in plan.ops):
        return plan
    ops = []
    for op in plan.ops:
        if isinstance(op, Put) and op.table in EXPIRING_TABLES and op.item.get("retain_until") is None:
            op = Put(op.table, {**op.item, "retain_until": until}, op.cond)
        elif isinstance(op, Update) and op.table in EXPIRING_TABLES and all(
                path(action) != "retain_until" for action in op.actions):
            op = Update(op.table, op.key, (*op.actions, Set("retain_until", until)), op.cond)
        ops.append(op)
    return Plan(plan.name, tuple(ops), plan.token, plan.own)


def keep_alive_age(settings: Settings) -> float:
    """How long after a run was last kept alive (or created) the keep-alive pass renews its items: half a horizon."""
    return settings.retention_horizon / 2


def keep_alive_period(settings: Settings) -> float:
    """How often beat starts a keep-alive pass: an eighth of a horizon, so an item is renewed at
    most five eighths of a horizon after its write, three eighths (plus the retention) before it expires."""
    return settings.retention_horizon / 8


def needs_sweep(run: RunRecord, status: str, now: float, settings: Settings, *, ops: set[str],
                bucket: bool) -> bool:
    """Whether a run ending at ``now`` goes to the retention index for beat's sweep to stamp its items.

    Not when every item it has already expires at least the retention after this end: its history,
    join and signal items are written expiring (``now + retention + horizon``) and renewed from
    ``stamped_at`` on, so they last long enough if the run ends within half a horizon of its creation
    or last renewal (half: a margin far wider than any clock's skew); and it has no item written
    without a TTL: no hook or tag op (``ops``: the kinds of op its history holds), no tag given at
    its start, no idempotency key, no place in a continue-as-new chain (the chain's first run is given
    its TTL by the sweep of the last), no payload object (``bucket``: this deployment sends payloads
    to the bucket, whose objects the sweep marks).
    """
    if settings.retention is None or status == RunStatus.CONTINUED.value or bucket or UNEXPIRING_OPS & ops:
        return True
    if run.tags or run.idempotency_key or run.chain_head or run.continued_from:
        return True
    return now >= (run.stamped_at or run.created_at) + keep_alive_age(settings)


def describe_expiry(run: RunRecord, settings: Settings) -> str:
    """When a run's items expire, for people (``workflows runs show``)."""
    if settings.retention is None:
        return "never (retention is off)"
    if run.retain_until is not None:
        return f"{_utc(run.retain_until)} (the run; its history up to the horizon later)"
    if run.status == RunStatus.CONTINUED.value:
        return "with its continue-as-new chain (kept while the chain lives)"
    renewed = run.stamped_at or run.created_at
    return f"never while it lives (history renewed by beat; last {_utc(renewed)})"


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def retention_delay(settings: Settings) -> float:
    """How long after its end a run's items are stamped: a lease, so that a step still running
    when its run ended (a fan-out branch recording its result) has written its items."""
    return settings.lease_seconds


def retain_ended_runs(engine: Engine, limit: int = 100, budget: float | None = None) -> int:
    """Stamp the items of runs that ended at least :func:`retention_delay` ago; return how many.

    ``budget``: wall-clock seconds after which no further run is started (beat passes one, so
    that stamping, a dozen requests a run, never holds up the timers and schedules of its next
    tick; the runs left wait in the index for the next sweep).
    """
    stamped, stop = 0, None if budget is None else time.monotonic() + budget
    before = engine.now() - retention_delay(engine.settings)
    try:
        run_ids = engine.store.runs_to_retain(before, limit=limit)
    except Exception:  # e.g. a runs table made before the by_retention index: timers and recovery go on
        log.exception("the retention index of the runs table cannot be read; ended runs are not stamped with "
                      "their TTL (see docs/retention.md, Limits)")
        return 0
    for run_id in run_ids:
        if stop is not None and stamped and time.monotonic() >= stop:
            break
        try:
            mark_payloads_ended(engine, run_id)  # first: a sweep that dies after the marks marks them again
            if engine.store.retain_run(run_id):
                stamped += 1
        except Exception:
            log.exception("run %s: stamping its items with their TTL failed; the next sweep tries again", run_id)
    return stamped


def keep_runs_alive(engine: Engine, budget: float | None = None, page: int = 100,
                    state: KeepAlivePass | None = None) -> int:
    """Go on with beat's keep-alive pass (within ``budget`` seconds); return how many runs it renewed.

    A pass lists, by status, every live run and renews each not kept alive for :func:`keep_alive_age`,
    and the first run of its continue-as-new chain likewise (``Store.keep_run_alive``): a chain's runs
    may each live a day while its first run, which handles and signals name, lives as long as the
    chain. A pass cut short by the budget goes on at the next call; the next pass starts
    :func:`keep_alive_period` after one ends. Nothing when retention is off. ``state``: where the pass
    is (default the engine's, beat's); a fresh one makes a whole pass now, whatever beat's schedule.
    """
    settings = engine.settings
    if settings.retention is None:
        return 0
    state = state or engine.keep_alive
    now = engine.now()
    if state.status is None:
        if now < state.next_pass:
            return 0
        state.status, state.cursor = 0, None
    stop, kept = None if budget is None else time.monotonic() + budget, 0
    older = now - keep_alive_age(settings)
    while state.status is not None and (stop is None or time.monotonic() < stop or not kept):
        status = KEPT_STATUSES[state.status]
        try:
            listed = engine.store.list_run_summaries(status=status, limit=page, cursor=state.cursor)
        except Exception:
            log.exception("the keep-alive pass cannot list %s runs; it starts over later", status)
            state.finish(now + keep_alive_period(settings))
            return kept
        for summary in listed:
            try:
                kept += engine.store.keep_run_alive(summary.run_id, older, write_expiry(now, settings) or 0)
            except Exception:
                log.exception("run %s: keeping its items alive failed; the next pass tries again", summary.run_id)
        state.cursor = listed.next_cursor
        if state.cursor is None:
            state.status = state.status + 1 if state.status + 1 < len(KEPT_STATUSES) else None
            if state.status is None:
                state.finish(now + keep_alive_period(settings))
        if stop is not None and time.monotonic() >= stop:
            break
    return kept


class KeepAlivePass:
    """Where an engine's keep-alive pass is: the status being listed (None: between passes) and its cursor."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.cursor: str | None = None
        self.next_pass = float("-inf")

    def finish(self, next_pass: float) -> None:
        """End this pass; the next starts at ``next_pass``."""
        self.status, self.cursor, self.next_pass = None, None, next_pass


def sweep_retention(engine: Engine, budget: float | None = None) -> dict[str, int]:
    """Beat's retention work: stamp ended runs, then go on with the keep-alive pass (each within
    half of ``budget``); how many runs each touched (``retained``, ``kept_alive``)."""
    half = None if budget is None else budget / 2
    return {"retained": retain_ended_runs(engine, budget=half), "kept_alive": keep_runs_alive(engine, budget=half)}


def sends_to_bucket(engine: Engine) -> bool:
    """Whether this deployment sends payloads over its threshold to the payload bucket."""
    settings = engine.settings
    return engine.payloads.blobs is not None and settings.inline_payload_bytes < settings.max_payload_bytes


def mark_payloads_ended(engine: Engine, run_id: str) -> int:
    """Mark every payload object of an ended run ended (one list request per 1,000 objects, one
    copy per object); return how many. Nothing when this deployment sends no payload to the bucket.

    The prefix is listed rather than the references collected from the run's items, because
    some objects are referenced by no item: a dispatched step's arguments travel in its message
    only, and an object whose record was never written (its writer died) is referenced by nothing.
    """
    blobs = engine.payloads.blobs
    if blobs is None or not sends_to_bucket(engine):
        return 0
    marked = 0
    for key, _ in blobs.list_blobs(run_prefix(run_id)):
        marked += blobs.mark_ended(key)
    return marked


def fan_out_positions(outcome_kinds: dict[int, str], cursor: int, waiting: dict[str, object] | None) -> list[int]:
    """The op positions of a run's fan-outs, whose joins (``<run id>#<pos>``) hold branch results
    and branch attempts: every recorded ``parallel`` outcome, and the op in flight if it is one."""
    positions = {pos for pos, kind in outcome_kinds.items() if kind in (OpKind.PARALLEL, OpKind.FIRST_OF)}
    if cursor >= 0 and (waiting or {}).get("kind") in (OpKind.PARALLEL, OpKind.FIRST_OF):
        positions.add(cursor)
    return sorted(positions)
