"""Continuing a run in place: a worker task runs the run's next step itself.

When a resume running in a worker task reaches a dispatched step that goes to a
queue the same worker consumes, the step runs right there, in the same thread, while
the workflow function waits on it (``steps.run_in_place``): the resume holds the run
by one claim, as for inline steps (a crash is recovered by the lease, the recovering
replay sending the step), its outcome is recorded as a step message's would be, and the
function goes on with the value: one write per step, its record.
No SQS send, receive or delete, no read of the run, and no replay of the function:
a run's CPU per step stays flat however long its history. A task keeps going for at
most ``Settings.in_place_seconds``, then sends the next step as usual (its task
replays once). Fan-out branches, recovery re-sends and steps of other queues are
always sent. When the worker is asked to stop (warm shutdown), a step running in
place finishes here, like any running task; from then on the transport's
``runs_here`` is False, so the run's next step is sent as a message.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from ..model.records import StepMessage


class InPlace(threading.local):
    """The in-place budget of the current thread's worker task."""

    def __init__(self) -> None:
        self.until: float | None = None

    @contextmanager
    def session(self, seconds: float) -> Iterator[None]:
        """Let the body of one worker task run steps in place for ``seconds``."""
        self.until = time.monotonic() + seconds if seconds > 0 else None
        try:
            yield
        finally:
            self.until = None

    def admits(self, call: StepMessage, runs_here: Callable[[str, str | None], bool]) -> bool:
        """Whether this worker task runs the step ``call`` sends in place, instead of sending it."""
        if self.until is None or time.monotonic() >= self.until or call.branch is not None:
            return False
        return runs_here(call.step, call.queue)
