"""One attempt of a step, and the record of a failed attempt that will be retried.

Inline, dispatched, in-place and fan-out-branch steps all run an attempt with
:func:`run_attempt`, record their final outcome as :meth:`StepAddress.outcome` says (one
write path: ``commit.write_outcome``) and record a failed attempt that will be retried with
:func:`record_failed_attempt`: a history record in the step's :class:`StepAddress`, written
under ``Store.record_attempt``'s rule. They differ only in what comes next: an inline
step records while it holds the run, then suspends it until a wake timer; a sent step
(dispatched, in place, branch) first stores a retry timer with :func:`schedule_retry`.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import random
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ... import codec
from ...errors import (
    FatalError,
    InvalidExport,
    InvalidTags,
    PayloadUnavailable,
    RetryableError,
    SerializationError,
    StepTimeout,
    describe,
)
from ..model.embed import embed
from ..model.failures import capture
from ..model.records import Branch, EventRecord, OpKind, StepMessage, TimerKind, TimerRecord, attempt_seq, event_seq
from ..model.registry import StepDef
from ..model.states import EventStatus
from ..replay.commands import RecordAttempt, RecordOutcome, RenewLease, ScheduleRetry
from ..replay.commit import apply
from ..replay.observer import StepAttempt
from ..storage.rules import check_item_size
from .heartbeat import HEARTBEATS
from .overrun import BodyEnd, outlived
from .step_loop import is_async_callable, run_async_step

if TYPE_CHECKING:
    from ..engine import Engine
    from ..storage.ports import Store

log = logging.getLogger("workflows.steps")


@dataclass(frozen=True)
class StepInfo:
    """What a running step can know about itself."""

    run_id: str
    pos: int
    attempt: int
    engine: Engine


_current_step: contextvars.ContextVar[StepInfo | None] = contextvars.ContextVar("step", default=None)


def current_step() -> StepInfo | None:
    """Return the step running in this thread, if any."""
    return _current_step.get()


@dataclass(frozen=True)
class Attempt:
    """The outcome of one attempt: a result, a final error, or a retry after ``retry_in`` s."""

    status: str
    data: str | None = None
    error: str | None = None
    retry_in: float | None = None
    started_at: float = 0.0
    attempt: int = 1
    failure: str | None = None  # a final failure's structure, JSON (``core.model.failures``)


@dataclass(frozen=True)
class StepAddress:
    """Where a step call's records go (its address): op ``pos`` of a run, or a branch of the
    fan-out at ``pos``.

    A branch's attempts are keyed in the history of its join (``run#pos``, never a run's
    id), at the branch index as position, so every branch has attempt records of its own.
    """

    run_id: str
    pos: int
    branch: Branch | None = None

    @classmethod
    def of(cls, message: StepMessage) -> StepAddress:
        """The address of the step call a message runs."""
        return cls(message.run_id, message.pos, message.branch)

    @property
    def key(self) -> tuple[str, int]:
        """The history partition and the position in it."""
        return (self.run_id, self.pos) if self.branch is None else (self.branch.join, self.branch.index)

    def outcome(self, name: str, outcome: Attempt, at: float) -> RecordOutcome:
        """The record of the step's final outcome, for every kind of step (``commit.write_outcome``):
        op ``pos``'s outcome in the run's history, or a branch's result in its join."""
        data = outcome.data if outcome.status == EventStatus.COMPLETED else outcome.failure  # a failure keeps its type
        event = EventRecord(run_id=self.run_id, seq=event_seq(self.pos), kind=OpKind.STEP.value,
                            status=outcome.status, at=at, name=name, data=data, error=outcome.error,
                            attempt=outcome.attempt, started_at=outcome.started_at)
        return RecordOutcome(event, branch=self.branch)

    def attempt_record(self, name: str, outcome: Attempt, at: float) -> EventRecord:
        """The history record of a failed attempt."""
        partition, pos = self.key
        return EventRecord(run_id=partition, seq=attempt_seq(pos, outcome.attempt), kind=OpKind.ATTEMPT.value,
                           status="failed", at=at, name=name, error=outcome.error, attempt=outcome.attempt,
                           started_at=outcome.started_at)


def record_failed_attempt(store: Store, address: StepAddress, name: str, outcome: Attempt,
                          at: float) -> EventRecord | None:
    """Record a failed attempt that will be retried, while its run is live; None if the record at its
    address holds this attempt or a later one, or the run has ended."""
    event = address.attempt_record(name, outcome, at)
    return event if apply(store, RecordAttempt(event, address.run_id)) else None


def retry_timer_id(message: StepMessage, attempt: int) -> str:
    """The id of the timer that sends ``attempt`` of the step (or branch) ``message`` runs.

    One id per attempt: a late copy of an earlier attempt (a duplicate delivery that fails or
    waits for a slot after its twin's retry was stored) writes its own timer, never over the
    later attempt's, whose message would then be lost (the run left to recovery). The stale
    timer's message finds its attempt recorded and does nothing.
    """
    index = "" if message.branch is None else message.branch.index
    return f"{message.run_id}#{message.pos}#retry#{index}#{attempt}"


def schedule_retry(engine: Engine, message: StepMessage, step: StepDef, outcome: Attempt) -> None:
    """Retry a sent step: store its retry timer (with the lease over the backoff), then record
    the attempt. Nothing is recorded for a run that has ended; a late copy's record loses,
    its timer (for the attempt after the late one: see :func:`retry_timer_id`) stands."""
    address, backoff = StepAddress.of(message), outcome.retry_in or 0.0
    data = embed({"step": step.name, "attempt": outcome.attempt + 1, "queue": step.queue, "priority": message.priority,
                  "branch": None if address.branch is None else address.branch.to_dict()}, message.args)
    retry = TimerRecord(timer_id=retry_timer_id(message, outcome.attempt + 1), kind=TimerKind.RETRY.value,
                        run_id=address.run_id, due_at=engine.now() + backoff, pos=address.pos, data=data)
    check_item_size({"error": outcome.error})  # a record that would be refused fails before the timer
    if apply(engine.store, ScheduleRetry(retry, backoff)):
        record_failed_attempt(engine.store, address, step.name, outcome, engine.now())


def attempt_ran(store: Store, address: StepAddress, attempt: int) -> bool:
    """Whether this attempt of the step ran already: its failure (or a later one), or the
    step's outcome, is recorded (one Query)."""
    partition, pos = address.key
    records = store.read_history(partition, after_seq=attempt_seq(pos, attempt) - 1, until_seq=event_seq(pos))
    return any(e.is_outcome or (e.attempt or 0) >= attempt for e in records)


def call_with_timeout(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any],
                      timeout: float | None, name: str) -> Any:
    """Call ``fn``; past ``timeout`` seconds raise StepTimeout.

    Python cannot stop a thread: a timed-out call keeps running in the
    background until it returns, and its result is discarded; it is reported to whoever
    watches the attempt (``overrun``: a concurrency slot is kept until it returns). An async
    ``fn`` runs on the process's step loop instead, where a timeout cancels it (see ``step_loop``).
    """
    if is_async_callable(fn):
        return run_async_step(fn, args, kwargs, timeout, name)
    if timeout is None:
        return fn(*args, **kwargs)
    box: dict[str, Any] = {}
    ended, end = threading.Lock(), BodyEnd()  # the lock: taken by the body's end or the timeout, first come

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc
        finally:
            if not ended.acquire(blocking=False):
                end.finish()  # the attempt timed out before: its watcher acts now

    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,), daemon=True,
                              name=f"step-{name}")
    thread.start()
    thread.join(timeout)
    if ended.acquire(blocking=False):  # the body has not returned: it runs on, watched
        outlived(end)
        raise StepTimeout(f"step {name!r} ran longer than its timeout of {timeout:g}s")
    thread.join()  # it returned (at the deadline, or before): its outcome stands
    if "error" in box:
        raise box["error"]
    return box.get("value")


def lease_heartbeat(engine: Engine, run_id: str, pos: int | None,
                    since: int | None = None) -> contextlib.AbstractContextManager[None]:
    """Renew the run's lease while a step runs, so the reconciler leaves it alone (a renewal
    that finds the run ended, cancelled or moved on is tried again: the step goes on).
    ``pos``: the cursor the run must be at (``since``: anywhere from ``since`` to ``pos``)."""
    def renew() -> None:
        apply(engine.store, RenewLease(run_id, pos, since))

    return HEARTBEATS.every(engine.settings.lease_seconds / 3, renew, f"the lease of run {run_id}")


@dataclass(frozen=True)
class LeaseRenewal:
    """Where a running step's heartbeat renews its run's lease: at cursor ``pos`` (``since``:
    anywhere from ``since`` to ``pos``); ``pos`` None: wherever the cursor is (a step in place)."""

    pos: int | None = None
    since: int | None = None


IN_PLACE = LeaseRenewal()


def run_attempt(engine: Engine, step: StepDef, op: StepAttempt, args_json: str,
                lease: LeaseRenewal = IN_PLACE) -> Attempt:
    """Run attempt ``op`` of ``step``, told to the engine's observer, and classify its outcome."""
    with engine.observer.attempt(op):
        outcome = _run_attempt(engine, step, op, args_json, lease)
        engine.observer.attempt_ended(op, outcome.status, outcome.error)
    if outcome.data is not None:  # outside the attempt: a failed write of the object is no step failure
        data = engine.payloads.offload(outcome.data, f"result of step {step.name!r}", op.run_id)
        outcome = dataclasses.replace(outcome, data=data)
    return outcome


def _run_attempt(engine: Engine, step: StepDef, op: StepAttempt, args_json: str, lease: LeaseRenewal) -> Attempt:
    """Run one attempt of ``step`` and classify its outcome by the retry policy."""
    run_id, pos, attempt = op.run_id, op.pos, op.attempt
    try:
        args, kwargs = engine.payloads.decode(args_json)
    except PayloadUnavailable as exc:  # its arguments' object is gone for good: the step fails, naming it
        return _failed(exc, engine.now(), attempt)
    started = engine.now()
    token = _current_step.set(StepInfo(run_id, pos, attempt, engine))
    try:
        with lease_heartbeat(engine, run_id, lease.pos, lease.since):
            value = call_with_timeout(step.fn, args, kwargs, step.timeout, step.name)
        data = codec.dumps(value, what=f"result of step {step.name!r}", limit=engine.settings.max_payload_bytes)
        return Attempt("completed", data=data, started_at=started, attempt=attempt)
    except (FatalError, SerializationError, InvalidTags, InvalidExport) as exc:
        return _failed(exc, started, attempt)  # (InvalidTags, InvalidExport: as when they were SerializationErrors)
    except Exception as exc:
        if attempt > step.retry.retries:
            return _failed(exc, started, attempt)
        delay = step.retry.delay(attempt, random.random())
        if isinstance(exc, RetryableError) and exc.retry_after is not None:
            delay = max(0.0, float(exc.retry_after))
        log.info("step %s of run %s attempt %d failed (%s); retry in %.2fs", step.name, run_id, attempt, exc, delay)
        return Attempt("retry", error=describe(exc), retry_in=delay, started_at=started, attempt=attempt)
    finally:
        _current_step.reset(token)


def _failed(exc: BaseException, started: float, attempt: int) -> Attempt:
    """A final failure: its text, and its structure (type, message, traceback, chain) as JSON."""
    return Attempt("failed", error=describe(exc), started_at=started, attempt=attempt,
                   failure=capture(exc).to_json())
