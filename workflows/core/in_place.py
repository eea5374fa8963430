"""Continuing a run in place: a worker task runs the run's next step itself.

When a task of a worker (a resume, or a step whose result it just recorded) reaches
the run's next step, and that step goes to a queue the same worker consumes, the
step runs next in the same thread instead of as a new message: the op is marked in
flight exactly as for a sent step (so recovery works the same), but the SQS send,
receive and delete and the step task's run read are saved. A task keeps going for
at most ``Settings.in_place_seconds``, then sends the next step as usual. Fan-out
branches, recovery re-sends and steps of other queues are always sent. When the
worker is asked to stop (warm shutdown), a step running in place finishes here,
like any running task, and is never handed to another worker; from then on the
transport's ``runs_here`` is False, so the run's next step, or a step kept but not
started, is sent as a message.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .records import RunRecord, RunStatus, StepMessage


@dataclasses.dataclass
class LocalStep:
    """A step kept in place: the message it would have been sent as, and the run as advanced."""

    message: StepMessage
    run: RunRecord


class InPlace(threading.local):
    """The in-place slot of the current thread (one pending step at most)."""

    def __init__(self) -> None:
        self.until: float | None = None
        self.pending: LocalStep | None = None

    @contextmanager
    def session(self, seconds: float) -> Iterator[None]:
        """Let the body of one worker task keep steps in place for ``seconds``."""
        self.until, self.pending = (time.monotonic() + seconds if seconds > 0 else None), None
        try:
            yield
        finally:
            self.until, self.pending = None, None

    def keep(self, run: RunRecord, pos: int, waiting: dict[str, Any], calls: list[StepMessage],
             runs_here: Callable[[str, str | None], bool]) -> bool:
        """Keep a just-dispatched op in place if it qualifies; True if kept (do not send it)."""
        if self.until is None or self.pending is not None or time.monotonic() >= self.until:
            return False
        if len(calls) != 1 or calls[0].branch is not None:
            return False
        call = calls[0]
        if not runs_here(call.step, call.queue):
            return False
        advanced = dataclasses.replace(run, status=RunStatus.RUNNING.value, cursor=pos, waiting=waiting)
        self.pending = LocalStep(call, advanced)
        return True

    def take(self) -> LocalStep | None:
        """The step kept in place, if any (it is then no longer pending)."""
        pending, self.pending = self.pending, None
        return pending
