"""Firing schedules: the tick's work, catch-up, overlap policies and running-run bookkeeping.

Beat (``beat/scheduler.py``) calls :func:`fire_due_schedules` on each tick; the testing kit and
the simulator call it with their own clocks. Cron maths lives in ``beat/cron.py`` (pure).

A fire goes through three writes: claim it (a conditional update of the schedule on
the ``next_fire_at`` read, which also puts the fire time in ``running`` and opens a
leased claim), start its run with an idempotency key and run id derived from the
schedule id and the fire time, then close the claim. Two beats, or a beat that
died between the writes, can therefore never start a fire twice, and an open
claim whose lease passed is finished by whichever beat sees it next.

Importing this module registers the run-end listener that takes ended runs out of
``running`` and starts buffered fires; workers and beat import it.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from beat.cron import EPOCH, ScheduleSpec, apply_jitter, fire_times_between, next_fire

from ...errors import ItemTooLarge, RunNotFound, SerializationError, UnknownWorkflow, describe
from ..engine import Engine
from ..model.records import Advance, RunStatus, ScheduleRecord, chain_key
from ..model.registry import get_workflow
from ..model.states import ScheduleState
from ..storage.chains import follow

log = logging.getLogger("workflows.schedules")

SCHEDULE_NAMESPACE = uuid.UUID("a3c9e0f4-5b1d-4e27-8c6a-2f71d9b3e815")
MAX_FIRES_PER_TICK = 20  # per schedule; a schedule catching up goes on next tick
_US = timedelta(microseconds=1)

STARTED, DUPLICATE, BUFFERED, SKIPPED, LOST, FAILED = "started", "duplicate", "buffered", "skipped", "lost", "failed"


# -- time and identity ------------------------------------------------------------------------
def to_epoch(moment: datetime) -> float:
    """Epoch seconds of an aware datetime, exact to the microsecond."""
    return ((moment - EPOCH) // _US) / 1_000_000


def to_datetime(epoch: float) -> datetime:
    """The UTC datetime of epoch seconds (inverse of :func:`to_epoch`)."""
    return EPOCH + _US * round(epoch * 1_000_000)


def fire_key(schedule_id: str, fire: float) -> str:
    """The idempotency key of a schedule's fire: one run per (schedule id, fire time)."""
    return f"schedule:{schedule_id}:{to_datetime(fire).isoformat()}"


def fire_run_id(schedule_id: str, fire: float) -> str:
    """The run id of a fire, derived from its key (a replayed start finds the same run)."""
    return str(uuid.uuid5(SCHEDULE_NAMESPACE, fire_key(schedule_id, fire)))


def claim_lease(engine: Engine) -> float:
    """Seconds an open claim is left to its claimer before another beat finishes it."""
    return min(engine.settings.lease_seconds, 60.0)


def due_of(spec: ScheduleSpec, schedule_id: str, fire: float) -> float:
    """When a fire is due: its time plus the schedule's deterministic jitter."""
    return to_epoch(apply_jitter(to_datetime(fire), spec.jitter, schedule_id)) if spec.jitter else fire


def next_after(spec: ScheduleSpec, schedule_id: str, after: float) -> tuple[float | None, float | None]:
    """The ``(fire, due)`` of the first fire strictly after ``after``; ``(None, None)`` when none is left."""
    nxt = next_fire(spec, to_datetime(after))
    if nxt is None:
        return None, None
    fire = to_epoch(nxt)
    return fire, due_of(spec, schedule_id, fire)


def pick_fire(spec: ScheduleSpec, sched: ScheduleRecord, now: float) -> float | None:
    """Return the fire to act on now that ``next_fire_at`` is due, after downtime too.

    Without a catch-up window only the latest due fire is kept (the older ones are
    skipped). With one, the oldest fire due no more than ``catchup_window`` ago. A
    result not yet due means every due fire was too late; None: no fire is left.
    """
    sid, first = sched.schedule_id, float(sched.next_fire_at)  # type: ignore[arg-type]
    window = sched.catchup_window
    if window is not None:
        fire: float | None = first
        while fire is not None and due_of(spec, sid, fire) < now - window:
            skip_to = max(fire, now - window - spec.jitter - 1e-6)
            fire, _ = next_after(spec, sid, skip_to)
        return fire
    nxt, nxt_due = next_after(spec, sid, first)
    if nxt is None or nxt_due is None or nxt_due > now:
        return first
    span = max(nxt - first, 1e-6)
    while True:  # widen the look-back until it holds a due fire (it ends: ``nxt`` is one)
        low = max(first, now - span - spec.jitter)
        for moment in reversed(fire_times_between(spec, to_datetime(low), to_datetime(now))):
            if due_of(spec, sid, to_epoch(moment)) <= now:
                return to_epoch(moment)
        span *= 2


# -- runs of a schedule -----------------------------------------------------------------------
def chain_head(engine: Engine, sched: ScheduleRecord, fire: float) -> Any:
    """The last run of the chain a fire started (following continue-as-new), or None."""
    run = engine.store.find_run(sched.heads.get(chain_key(fire)) or fire_run_id(sched.schedule_id, fire))
    if run is None:  # the latest run recorded expired: the fire's first run anchors its chain (core/storage/chains.py)
        run = engine.store.find_run(fire_run_id(sched.schedule_id, fire))
    try:
        return None if run is None else follow(engine.store, run)
    except RunNotFound:  # a chain older than anchors whose middle run expired
        return None


def settle(engine: Engine, sched: ScheduleRecord) -> ScheduleRecord:
    """Release fires whose runs ended unseen (a listener lost with its worker); start buffered fires."""
    for fire in sched.running:
        if fire == sched.pending:
            continue
        run = chain_head(engine, sched, fire)
        if run is None or (run.is_terminal and run.status != RunStatus.CONTINUED):
            log.info("schedule %s: the run of fire %s has ended; releasing it", sched.schedule_id, fire)
            sched = engine.store.release_fire(sched.schedule_id, fire) or sched
    return drain(engine, sched)


def cancel_running(engine: Engine, sched: ScheduleRecord) -> None:
    """Ask the live run of every running fire to cancel."""
    for fire in sched.running:
        run = chain_head(engine, sched, fire)
        if run is not None and not run.is_terminal:
            log.info("schedule %s: cancelling run %s (overlap %s)", sched.schedule_id, run.run_id, sched.overlap)
            engine.request_cancel(run.run_id)


def start_claimed(engine: Engine, sched: ScheduleRecord, fire: float) -> tuple[str, ScheduleRecord | None]:
    """Start the run of a claimed fire (idempotently), then close the claim.

    A transient failure leaves the claim open: its lease makes beat retry it.
    """
    sid = sched.schedule_id
    try:
        definition = get_workflow(sched.workflow)
        run_id, created = engine.create_run(definition, sched.args, run_id=fire_run_id(sid, fire),
                                            idempotency_key=fire_key(sid, fire), schedule_id=sid, fire_time=fire)
    except (UnknownWorkflow, SerializationError, ItemTooLarge) as exc:
        log.error("schedule %s: fire %s cannot start: %s", sid, to_datetime(fire).isoformat(), exc)
        return FAILED, engine.store.finish_fire(sid, fire, error=describe(exc))
    except Exception:
        log.exception("schedule %s: start of fire %s failed; retried after its claim lease", sid, fire)
        return LOST, None
    after = engine.store.finish_fire(sid, fire)
    if not created:  # a replayed fire: its run may have ended long ago, with nobody left to release it
        run = chain_head(engine, after or sched, fire)
        if run is not None and run.is_terminal and run.status != RunStatus.CONTINUED:
            after = engine.store.release_fire(sid, fire) or after
        return DUPLICATE, after
    log.info("schedule %s: fire %s -> run %s", sid, to_datetime(fire).isoformat(), run_id)
    return STARTED, after


def drain(engine: Engine, sched: ScheduleRecord) -> ScheduleRecord:
    """Start the oldest buffered fire if nothing runs (one caller wins the promotion)."""
    if sched.state != ScheduleState.ACTIVE or sched.running or not sched.buffered or sched.pending is not None:
        return sched
    fire = sched.buffered[0]
    promoted = engine.store.promote_buffered(sched.schedule_id, fire, fire_run_id(sched.schedule_id, fire),
                                             lease_until=engine.now() + claim_lease(engine))
    if promoted is None:
        return engine.store.find_schedule(sched.schedule_id) or sched
    _, after = start_claimed(engine, promoted, fire)
    return after or promoted


def apply_fire(engine: Engine, sched: ScheduleRecord, fire: float, overlap: str, now: float,
               advance: Advance | None = None) -> tuple[str, ScheduleRecord | None]:
    """Act on one fire under an overlap policy: start it, buffer it or skip it.

    ``advance`` moves the schedule's next fire on, for a fire of its own timetable; None for a
    manual fire.

    Returns:
        The outcome and the schedule after it (None when a condition failed: re-read).
    """
    store, sid = engine.store, sched.schedule_id
    if sched.running and overlap != "allow_all":
        sched = settle(engine, sched)
    if not sched.running and sched.buffered and overlap not in ("allow_all", "terminate_other"):
        sched = drain(engine, sched)  # buffered fires go first
    busy = bool(sched.running)
    lease = now + claim_lease(engine)
    if busy and overlap in ("cancel_other", "terminate_other"):
        cancel_running(engine, sched)
    if not busy or overlap in ("allow_all", "terminate_other"):
        claimed = store.claim_fire(sid, fire, fire_run_id(sid, fire), lease_until=lease,
                                   advance=advance, when_idle=overlap not in ("allow_all", "terminate_other"))
        return (LOST, None) if claimed is None else start_claimed(engine, claimed, fire)
    if overlap == "buffer_all" or (overlap == "buffer_one" and not sched.buffered) or overlap == "cancel_other":
        replace = bool(sched.buffered) if overlap == "cancel_other" else None
        after = store.buffer_fire(sid, fire, advance=advance, replace=replace, only_first=overlap == "buffer_one")
        return (BUFFERED if after else LOST), after
    if advance is None:
        return SKIPPED, sched
    after = store.skip_fire(sid, advance)
    return (SKIPPED if after else LOST), after


# -- beat's tick --------------------------------------------------------------------------------
def fire_schedule(engine: Engine, sched: ScheduleRecord, now: float) -> int:
    """Act on every fire of one schedule due at ``now``; return the runs started."""
    started = 0
    for _ in range(MAX_FIRES_PER_TICK):
        sid = sched.schedule_id
        if sched.pending is not None:  # an open claim: finish it once its lease passed
            if sched.due_at is None or sched.due_at > now:
                return started
            if not engine.store.renew_claim(sid, sched.pending, sched.due_at, now + claim_lease(engine)):
                return started
            outcome, after = start_claimed(engine, sched, sched.pending)
            started += outcome == STARTED
        else:
            if sched.next_fire_at is None and sched.state == ScheduleState.ACTIVE:  # due to look after its last runs
                after = settle(engine, sched)
                if after.pending is None:
                    engine.store.recheck_schedule(sid, keep=bool(after.running or after.buffered))
                return started
            if sched.state != ScheduleState.ACTIVE or sched.next_fire_at is None or sched.next_due_at is None \
                    or sched.next_due_at > now:
                return started
            spec = ScheduleSpec.from_dict(sched.spec)
            fire = pick_fire(spec, sched, now)
            if fire is None or due_of(spec, sid, fire) > now:  # every due fire was past the catch-up window
                nxt = None if fire is None else due_of(spec, sid, fire)
                after = engine.store.skip_fire(sid, Advance(sched.next_fire_at, fire, nxt), when_running=False)
            else:
                next_fire_, next_due = next_after(spec, sid, fire)
                outcome, after = apply_fire(engine, sched, fire, sched.overlap, now,
                                            Advance(sched.next_fire_at, next_fire_, next_due))
                started += outcome == STARTED
                if outcome == LOST and after is None:
                    after = engine.store.find_schedule(sid)
        if after is None:
            return started
        sched = after
    return started


def fire_due_schedules(engine: Engine, now: float | None = None, limit: int = 500) -> int:
    """Fire every due schedule (beat's tick); safe with several beats. Returns runs started."""
    ensure_listener(engine)
    now = engine.now() if now is None else now
    started = 0
    for sched in engine.store.due_schedules(now, limit=limit):
        try:
            started += fire_schedule(engine, sched, now)
        except Exception:
            log.exception("schedule %s failed to fire; it stays due", sched.schedule_id)
    return started


# -- run ends -----------------------------------------------------------------------------------
def on_run_end(engine: Engine, run: Any) -> None:
    """Run-end listener: a scheduled run that ended leaves ``running``; a buffered fire may start."""
    if run.schedule_id is None or run.fire_time is None:
        return
    try:
        if run.status == RunStatus.CONTINUED:
            if run.continued_to:
                engine.store.advance_chain(run.schedule_id, run.fire_time, run.continued_to)
            return
        after = engine.store.release_fire(run.schedule_id, run.fire_time)
        if after is not None:
            drain(engine, after)
    except Exception:  # the run has ended either way; beat settles what is left at the next fire
        log.exception("schedule %s: bookkeeping of ended run %s failed", run.schedule_id, run.run_id)


def ensure_listener(engine: Engine) -> None:
    """Register :func:`on_run_end` on ``engine`` once."""
    if not any(getattr(fn, "func", None) is on_run_end for fn in engine.run_end_listeners):
        engine.run_end_listeners.append(partial(on_run_end, engine))

