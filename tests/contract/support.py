"""Helpers of the store contract tests: fresh ids, runs, timers, schedules."""

from __future__ import annotations

import uuid
from typing import Any

from workflows.core.model.records import EventRecord, RunRecord, ScheduleRecord, TimerRecord, event_seq


def uid(prefix: str = "r") -> str:
    """A fresh id: tests on the DynamoDB store share its tables."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def run_record(store: Any, *, run_id: str | None = None, key: str | None = None, workflow: str = "wf",
               created_at: float | None = None, **fields: Any) -> RunRecord:
    return RunRecord(run_id=run_id or uid(), workflow=workflow, status="pending",
                     created_at=store.now() if created_at is None else created_at, args="[[1],{}]",
                     idempotency_key=key, **fields)


def record_outcome(store: Any, run_id: str, pos: int, kind: str, status: str, **fields: Any) -> bool:
    """Record op ``pos``'s outcome once (``Store.record_event`` at its outcome key); False if one was."""
    return bool(store.record_event(EventRecord(run_id, event_seq(pos), kind, status, store.now(), **fields)))


def start(store: Any, **fields: Any) -> str:
    """Create a run and return its id."""
    run_id, created = store.create_run(run_record(store, **fields))
    assert created
    return run_id


def timer(run_id: str, pos: int, due_at: float, kind: str = "sleep", data: str | None = None) -> TimerRecord:
    return TimerRecord(timer_id=f"{run_id}#{pos}#{kind}", kind=kind, run_id=run_id, due_at=due_at, pos=pos, data=data)


def due_ids(store: Any, run_id: str) -> set[str]:
    """The due timers of one run (other tests' timers may be due too)."""
    return {t.timer_id for t in store.due_timers(limit=1_000_000) if t.run_id == run_id}


def schedule(store: Any, *, schedule_id: str | None = None, workflow: str = "wf", next_fire: float | None = None,
             jitter: float = 0.0, state: str = "active", **fields: Any) -> ScheduleRecord:
    """Create a schedule firing next at ``next_fire`` (default: in 60 s)."""
    fire = store.now() + 60 if next_fire is None else next_fire
    record = ScheduleRecord(schedule_id=schedule_id or uid("s"), workflow=workflow, spec={"every": 60},
                            overlap="skip", state=state, next_fire_at=fire, next_due_at=fire + jitter, **fields)
    return store.create_schedule(record)


def due_schedule_ids(store: Any, now: float | None = None) -> set[str]:
    return {s.schedule_id for s in store.due_schedules(now, limit=1_000_000)}
