"""A new run as created: the timers it starts with, and whether a stored run is still as created
(never dispatched, woken or recovered), which lets a fresh resume skip reading it."""

from __future__ import annotations

from ..admission.delayed import start_timer
from ..model.records import CREATED_FIELDS, RunRecord, RunStatus, TimerKind, TimerRecord


def as_created(run: RunRecord | None) -> bool:
    """Whether a stored run is still as created: never dispatched, woken or recovered."""
    return (run is not None and run.status == RunStatus.PENDING and run.cursor == -1 and run.wake_seq == 0
            and run.recoveries == 0)


def still_created(stored: RunRecord | None, carried: RunRecord) -> bool:
    """Whether the stored run is still the run a fresh message carried (its creation's request id
    and created fields), as created."""
    return (stored is not None and as_created(stored) and stored.req == carried.req
            and all(getattr(stored, name) == getattr(carried, name) for name in CREATED_FIELDS))


def record_timers(record: RunRecord) -> list[TimerRecord]:
    """The timers a new run starts with (its deadline, its start time if it is delayed)."""
    timers = [] if record.start_at is None or (start := start_timer(record)) is None else [start]
    if record.deadline is None:
        return timers
    return [*timers, TimerRecord(timer_id=f"{record.run_id}#deadline", kind=TimerKind.DEADLINE.value,
                                 run_id=record.run_id, due_at=record.deadline)]
