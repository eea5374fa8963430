"""Crash points: imported by a victim process (via WORKFLOWS_IMPORTS), this module makes the
process SIGKILL itself the first time it passes the point named by WORKFLOWS_CRASH_AT."""

from __future__ import annotations

import functools
import os
import signal
from pathlib import Path
from typing import Any, Callable

from persistence.store import DynamoStore as Store

POINT = os.environ.get("WORKFLOWS_CRASH_AT", "")
MARKER_DIR = Path(os.environ.get("WORKFLOWS_CRASH_DIR", "."))


def crash(point: str) -> None:
    """Kill this process with SIGKILL, once per point (a marker file says it happened)."""
    marker = MARKER_DIR / f"crashed-{point}"
    if POINT != point or marker.exists():
        return
    marker.write_text(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGKILL)


def after(method: str, point: str, when: Callable[..., bool]) -> None:
    """Crash after ``Store.<method>`` returns, when ``when(result, *args)`` holds."""
    original = getattr(Store, method)

    @functools.wraps(original)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if when(result, *args, **kwargs):
            crash(point)
        return result

    setattr(Store, method, wrapper)


# A dispatched step's result is recorded; the worker dies before continuing the run.
after("record_event", "after_step_record", lambda ok, event, **_: ok and event.kind == "step" and event.is_outcome)
# A sent step's outcome is recorded carrying the next step's dispatch (core.replay.marks); the worker dies
# before sending that step's message (the lease's recovery sends it).
after("record_event", "after_marked_record", lambda ok, event, **_: ok and event.next_waiting is not None)
# A resume won the in-flight write (a step sent), or claimed the run (a step run in place); it dies
# before sending the step message, or before running the step.
after("advance_run", "mid_resume", lambda ok, *a, **_: ok)
after("claim_run", "mid_resume", lambda ok, *a, **_: ok)
# A branch's result is recorded; the worker dies before counting it in the join.
after("record_branch", "mid_fan_in", lambda ok, *a, **_: ok)
# The join is complete; the worker dies before recording the parent's outcome.
after("join_branch", "after_join", lambda done, *a, **_: done)
# A fan-out with completion criteria: the tally that meets min_successful=2 is written; the worker dies
# before recording the fan-out's outcome (a redelivered branch or recovery decides again).
after("tally_branch", "after_tally", lambda sets, *a, **_: len(sets[0]) >= 2)
# Beat recorded a sleep's outcome; it dies before waking the run.
after("record_event_while_live", "beat_tick", lambda ok, event, *a, **_: ok and event.kind == "sleep")
