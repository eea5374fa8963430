"""Delayed starts, the run's side: a run created with a start time (``start(..., delay="10m")``)
waits in status ``delayed`` until then (docs/guide.md, "Delayed start").

The run is stored at once, without a lease, with a ``start`` timer due at its start time, in the
one write that creates it (invariant 10: the timer is what will resume it). When the timer comes
due, beat wakes the run (``Engine.wake``): its first resume replays it like any new run, and its
first op sets its status. A cancel ends it before it reaches the gate, without running any of its
code. A resume before the start time (a signal sent to it woke it) parks it again: status
``delayed``, no lease, the same timer, in one write conditional on nothing having woken it meanwhile.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ...durations import Duration, to_seconds
from ...errors import InvalidStartTime
from ..model.records import RunRecord, RunStatus, TimerKind, TimerRecord

if TYPE_CHECKING:
    from ..engine import Engine


def start_timer_id(run_id: str) -> str:
    """The id of a delayed run's ``start`` timer."""
    return f"{run_id}#start"


def start_timer(run: RunRecord) -> TimerRecord | None:
    """The timer that starts a delayed run (None for a run that starts at once)."""
    if run.start_at is None:
        return None
    return TimerRecord(timer_id=start_timer_id(run.run_id), kind=TimerKind.START.value, run_id=run.run_id,
                       due_at=run.start_at)


def hold_delayed(engine: Engine, run: RunRecord) -> bool | None:
    """Keep a delayed run from starting before its start time.

    Returns True when the run may go on (not delayed, already started, or its time has come), False
    when it was parked until its start time, None when it must be read again (it changed meanwhile).
    """
    timer = start_timer(run)
    if timer is None or run.cursor != -1 or timer.due_at <= engine.now():
        return True
    parked = engine.store.defer_run(run.run_id, run.wake_seq, timer, status=RunStatus.DELAYED.value)
    return False if parked else None


def start_time(delay: Duration | None, start_at: datetime | None, now: float) -> float | None:
    """The start time of a start given ``delay`` (a duration) or ``start_at`` (an aware datetime),
    in epoch seconds; None when it starts at once (no delay, a zero delay or a time already passed).

    Raises:
        InvalidStartTime: both are given, or ``start_at`` is not an aware datetime.
        InvalidDuration: ``delay`` is not a duration.
    """
    if delay is not None and start_at is not None:
        raise InvalidStartTime("give delay= or start_at=, not both")
    if start_at is not None:
        if not isinstance(start_at, datetime) or start_at.tzinfo is None or start_at.utcoffset() is None:
            raise InvalidStartTime(f"start_at must be an aware datetime (with a time zone), got {start_at!r}")
        when = start_at.timestamp()
    elif delay is not None:
        when = now + to_seconds(delay, what="delay")
    else:
        return None
    return when if when > now else None
