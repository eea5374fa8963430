"""The observer port: what the engine tells about its work, for traces, metrics and logs.

The engine calls its ``Observer`` at points it passes anyway (a resume, a step attempt,
a suspension at a wait, a due timer, a recovery, a run's end); it never reads anything
back, so an observer cannot change what the engine does. Adapters implement it
(``workflows.observe``); the default does nothing. :class:`Observers` fans out to several
and keeps a failing observer from ever failing the engine.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any, ContextManager, Iterator, Protocol

from ..model.records import RunRecord, TimerRecord

log = logging.getLogger("workflows.observer")


@dataclass(frozen=True)
class StepAttempt:
    """One attempt of a step: op ``pos`` of a run (``branch``: its index in a fan-out)."""

    run_id: str
    workflow: str
    step: str
    pos: int
    attempt: int
    branch: int | None = None


class Observer(Protocol):
    """Receives the engine's events; every method must be cheap and return promptly."""

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        """Around one resume of a run (its replays until it suspends, dispatches or ends)."""

    def replaying(self, run: RunRecord) -> None:
        """A resume read the run and replays it (its workflow is now known)."""

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        """Around one attempt of a step (the call of its function)."""

    def attempt_ended(self, op: StepAttempt, status: str, error: str | None) -> None:
        """An attempt ended: ``completed``, ``failed`` (for good) or ``retry``."""

    def waiting(self, run: RunRecord, pos: int, waiting: dict[str, Any]) -> None:
        """The run suspended at op ``pos`` (a sleep, hook, signal, child, or an inline retry's backoff)."""

    def timer(self, timer: TimerRecord, lag: float) -> ContextManager[None]:
        """Around the firing of a due timer, ``lag`` seconds after its due time."""

    def recovered(self, run: RunRecord) -> None:
        """The reconciler took over a run whose lease expired, and resumes it."""

    def joined(self, run: RunRecord, pos: int, branches: int, seconds: float) -> None:
        """A fan-out's join completed: ``seconds`` from its dispatch to the completing branch."""

    def run_ended(self, run: RunRecord) -> None:
        """A run ended (this process won the write that ended it)."""

    def deferred(self, run: RunRecord, reason: str) -> None:
        """This worker cannot serve the run (unknown workflow, code version) and left it to another;
        ``run.deferral`` holds the deferral just stored (``core.admission.deferral.Deferral.of(run)``)."""

    def dead_lettered(self, reason: str) -> None:
        """A message was set aside as poison (adapters call this; the engine does not)."""


class NullObserver:
    """The default observer: does nothing."""

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        return contextlib.nullcontext()

    def replaying(self, run: RunRecord) -> None:
        return None

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        return contextlib.nullcontext()

    def attempt_ended(self, op: StepAttempt, status: str, error: str | None) -> None:
        return None

    def waiting(self, run: RunRecord, pos: int, waiting: dict[str, Any]) -> None:
        return None

    def timer(self, timer: TimerRecord, lag: float) -> ContextManager[None]:
        return contextlib.nullcontext()

    def recovered(self, run: RunRecord) -> None:
        return None

    def joined(self, run: RunRecord, pos: int, branches: int, seconds: float) -> None:
        return None

    def run_ended(self, run: RunRecord) -> None:
        return None

    def deferred(self, run: RunRecord, reason: str) -> None:
        return None

    def dead_lettered(self, reason: str) -> None:
        return None


class Observers(NullObserver):
    """Several observers as one; an observer that raises is logged and skipped."""

    def __init__(self, observers: list[Observer]) -> None:
        self.observers = list(observers)

    def _each(self, method: str, *args: Any) -> None:
        for observer in self.observers:
            try:
                getattr(observer, method)(*args)
            except Exception:  # noqa: BLE001 - observing must never fail the engine
                log.warning("observer %r failed in %s", observer, method, exc_info=True)

    @contextlib.contextmanager
    def _around(self, method: str, *args: Any) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for observer in self.observers:
                try:
                    stack.enter_context(getattr(observer, method)(*args))
                except Exception:  # noqa: BLE001 - observing must never fail the engine
                    log.warning("observer %r failed in %s", observer, method, exc_info=True)
            yield

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        return self._around("resume", run_id, recovering)

    def replaying(self, run: RunRecord) -> None:
        self._each("replaying", run)

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        return self._around("attempt", op)

    def attempt_ended(self, op: StepAttempt, status: str, error: str | None) -> None:
        self._each("attempt_ended", op, status, error)

    def waiting(self, run: RunRecord, pos: int, waiting: dict[str, Any]) -> None:
        self._each("waiting", run, pos, waiting)

    def timer(self, timer: TimerRecord, lag: float) -> ContextManager[None]:
        return self._around("timer", timer, lag)

    def recovered(self, run: RunRecord) -> None:
        self._each("recovered", run)

    def joined(self, run: RunRecord, pos: int, branches: int, seconds: float) -> None:
        self._each("joined", run, pos, branches, seconds)

    def run_ended(self, run: RunRecord) -> None:
        self._each("run_ended", run)

    def deferred(self, run: RunRecord, reason: str) -> None:
        self._each("deferred", run, reason)

    def dead_lettered(self, reason: str) -> None:
        self._each("dead_lettered", reason)
