"""What beat drives: firing due timers and recovering runs whose lease expired."""

from __future__ import annotations

import json
import logging
from typing import Any

from ..engine import Engine
from ..model.embed import unembed
from ..model.records import (
    Branch,
    EventRecord,
    OpKind,
    ResumeMessage,
    StepMessage,
    TimerKind,
    TimerRecord,
    event_seq,
)
from ..model.states import EventStatus, HookStatus
from ..replay.children import fire_close
from ..replay.commands import RunEnd
from ..storage.recovery import exhausted
from ..storage.retention import sweep_retention

log = logging.getLogger("workflows.sweeper")


def fire_due_timers(engine: Engine, limit: int = 500) -> int:
    """Fire every due timer (idempotently: two beats may fire one timer, its effect lands once)."""
    fired = 0
    for timer in engine.store.due_timers(limit=limit):
        try:
            with engine.observer.timer(timer, engine.now() - timer.due_at):
                fire_timer(engine, timer)
            fired += 1
        except Exception:
            log.exception("timer %s failed to fire; it stays due", timer.timer_id)
    return fired


def fire_timer(engine: Engine, timer: TimerRecord) -> None:
    """Apply one due timer, then delete it (a crash before the delete repeats a no-op)."""
    store, kind, run_id, pos = engine.store, timer.kind, timer.run_id, timer.pos
    if kind == TimerKind.RETRY:
        if store.claim_timer(timer.timer_id, write_id=timer.write_id):
            _send_retry(engine, timer, *unembed(timer.data or "{}", "args"))
            store.delete_timer(timer.timer_id, write_id=timer.write_id)
        return
    data = json.loads(timer.data) if timer.data else {}
    if kind == TimerKind.SLEEP and pos is not None:
        store.record_event_while_live(EventRecord(run_id=run_id, seq=event_seq(pos), kind=OpKind.SLEEP.value,
                                                  status=EventStatus.FIRED, at=engine.now()))
        engine.wake(run_id)
    elif kind == TimerKind.SIGNAL_TIMEOUT and pos is not None:
        store.record_event_while_live(EventRecord(run_id=run_id, seq=event_seq(pos), kind=OpKind.SIGNAL.value,
                                                  status=EventStatus.TIMED_OUT, at=engine.now(), name=data.get("name")))
        engine.wake(run_id)
    elif kind == TimerKind.HOOK_TIMEOUT:
        # Wake whenever the hook is expired (not only when this call expired it): a sweep
        # that died between the expiry and the wake leaves the timer, and this repeat wakes.
        hook = None if store.expire_hook(data["hash"]) else store.get_hook(data["hash"])
        if hook is None or hook.status == HookStatus.EXPIRED:
            engine.wake(run_id)
    elif kind == TimerKind.PARENT_CLOSE:  # the ended parent's process died before it closed its children
        fire_close(engine, timer)
    elif kind == TimerKind.DEADLINE:
        run = store.find_run(run_id)
        if run is not None and not run.is_terminal:
            engine.time_out(run)
    else:  # "wake": an inline step's retry backoff (or a gate's wait) has passed; "start": a delayed run's time
        engine.wake(run_id)
    store.delete_timer(timer.timer_id, write_id=timer.write_id)  # not the timer written again since it was read


def _send_retry(engine: Engine, timer: TimerRecord, data: dict[str, Any], args: str | None) -> None:
    run = engine.store.find_run(timer.run_id)
    if run is None or run.is_terminal or timer.pos is None or args is None:
        return
    engine.transport.send_step(StepMessage(data["step"], timer.run_id, timer.pos, int(data["attempt"]), args,
                                           branch=Branch.from_dict(data.get("branch")), queue=data.get("queue"),
                                           resent=True,  # a repeat is possible: check what is recorded
                                           priority=data.get("priority")))


def reconcile(engine: Engine, limit: int = 100) -> int:
    """Resume runs whose lease expired (found through the sparse lease index, never a scan).

    Each is read, then claimed (``core.storage.recovery``): a claim counts towards ``max_recovery_attempts``
    only when a worker took the previous recovery and the run did not move on since; at the cap
    the run fails saying so. A recovery no worker has taken yet is sent again, uncounted.
    """
    recovered = 0
    for run_id in engine.store.stale_runs(limit=limit):
        seen = engine.store.find_run(run_id)
        if seen is None or seen.is_terminal:
            continue
        run = engine.store.claim_recovery(seen)
        if run is None:
            continue
        if exhausted(run, engine.settings):
            cap = engine.settings.max_recovery_attempts
            engine.end(run, RunEnd.failed(f"recovery attempts exhausted ({cap})"))
            continue
        if seen.recovery_pending:
            log.info("run %s: lease expired while its recovery waits in a queue, sending it again (%d unseen)",
                     run_id, seen.recovery_pending)
        else:
            log.warning("run %s: lease expired, resuming (recovery %d, %d counted of %d)", run_id, run.recoveries,
                        run.recovery_faults, engine.settings.max_recovery_attempts)
        engine.observer.recovered(run)
        engine.transport.send_resume(ResumeMessage(run_id, recovering=True, priority=run.priority))
        recovered += 1
    return recovered


def sweep(engine: Engine, retention_budget: float | None = None) -> dict[str, int]:
    """One beat tick's worth of timer, recovery and retention work (retention last, within
    ``retention_budget`` seconds when given)."""
    counts = {"timers": fire_due_timers(engine), "recovered": reconcile(engine)}
    counts.update(sweep_retention(engine, budget=retention_budget))
    return counts
