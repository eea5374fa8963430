"""Executing step attempts: timeouts, retries, lease heartbeats, recording outcomes."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import random
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .. import codec
from ..errors import FatalError, RetryableError, SerializationError, StepTimeout, describe
from ..registry import StepDef, get_step
from .embed import embed
from .records import EventRecord, OpKind, RunRecord, StepMessage, TimerKind, TimerRecord, attempt_seq, event_seq

if TYPE_CHECKING:
    from .engine import Engine

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

    def attempt_event(self, run_id: str, pos: int, name: str, at: float) -> EventRecord:
        """The history record of this failed attempt."""
        return EventRecord(run_id=run_id, seq=attempt_seq(pos, self.attempt), kind=OpKind.ATTEMPT.value,
                           status="failed", at=at, name=name, error=self.error, attempt=self.attempt,
                           started_at=self.started_at)


def call_with_timeout(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any],
                      timeout: float | None, name: str) -> Any:
    """Call ``fn``; past ``timeout`` seconds raise StepTimeout.

    Python cannot stop a thread: a timed-out call keeps running in the
    background until it returns, and its result is discarded.
    """
    if timeout is None:
        return fn(*args, **kwargs)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,), daemon=True,
                              name=f"step-{name}")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise StepTimeout(f"step {name!r} ran longer than its timeout of {timeout:g}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@contextlib.contextmanager
def lease_heartbeat(engine: Engine, run_id: str, pos: int | None) -> Iterator[None]:
    """Renew the run's lease while a step runs, so the reconciler leaves it alone."""
    interval = engine.settings.lease_seconds / 3
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval):
            try:
                engine.store.renew_lease(run_id, pos)
            except Exception:  # a missed renewal only risks a duplicate attempt
                log.warning("lease renewal of run %s failed", run_id, exc_info=True)

    thread = threading.Thread(target=beat, daemon=True, name=f"lease-{run_id}")
    thread.start()
    try:
        yield
    finally:
        stop.set()


def run_attempt(engine: Engine, step: StepDef, args_json: str, attempt: int, run_id: str, pos: int,
                *, in_flight_pos: int | None = None) -> Attempt:
    """Run one attempt of ``step`` and classify its outcome by the retry policy."""
    args, kwargs = codec.loads(args_json)
    started = engine.now()
    token = _current_step.set(StepInfo(run_id, pos, attempt, engine))
    try:
        with lease_heartbeat(engine, run_id, in_flight_pos):
            value = call_with_timeout(step.fn, args, kwargs, step.timeout, step.name)
        data = codec.dumps(value, what=f"result of step {step.name!r}", limit=engine.settings.max_payload_bytes)
        return Attempt("completed", data=data, started_at=started, attempt=attempt)
    except (FatalError, SerializationError) as exc:
        return Attempt("failed", error=describe(exc), started_at=started, attempt=attempt)
    except Exception as exc:
        if attempt > step.retry.retries:
            return Attempt("failed", error=describe(exc), started_at=started, attempt=attempt)
        delay = step.retry.delay(attempt, random.random())
        if isinstance(exc, RetryableError) and exc.retry_after is not None:
            delay = max(0.0, float(exc.retry_after))
        log.info("step %s of run %s attempt %d failed (%s); retry in %.2fs", step.name, run_id, attempt, exc, delay)
        return Attempt("retry", error=describe(exc), retry_in=delay, started_at=started, attempt=attempt)
    finally:
        _current_step.reset(token)


def run_worker_task(engine: Engine, body: Callable[[], None]) -> None:
    """Run the body of a worker task, then each next step it kept in place (see ``in_place``).

    A kept step that has not started when the worker begins to stop is sent instead.
    """
    with engine.in_place.session(engine.settings.in_place_seconds):
        body()
        while (local := engine.in_place.take()) is not None:
            message = local.message
            if not engine.transport.runs_here(message.step, message.queue):
                engine.transport.send_step(message)  # already marked in flight: a plain send
                return
            execute_step(engine, message, redelivered=False, run=local.run)


def execute_step(engine: Engine, message: StepMessage, *, redelivered: bool = True,
                 run: RunRecord | None = None) -> None:
    """Body of a dispatched step message: run it, record the outcome, continue the run in place.

    ``redelivered``: the broker may have delivered this message before; then the
    recorded outcome is read first, so a step with a recorded result never runs
    again. A first delivery skips that read (the outcome write is conditional anyway).
    ``run``: the run as this thread just advanced it (a step kept in place), to save a read.
    """
    step_name, run_id, pos, attempt, branch = message.step, message.run_id, message.pos, message.attempt, message.branch
    step = get_step(step_name)
    store = engine.store
    run = run or store.find_run(run_id)
    if run is None:
        engine.transport.dead_letter("step message for an unknown run",
                                     {"step": step_name, "run_id": run_id, "pos": pos, "attempt": attempt})
        return
    if run.is_terminal:
        return
    if run.cancel_requested:
        engine.resume(run_id, run=run)
        return
    if run.cursor > pos or (redelivered and _recorded(engine, run, message)):
        return  # a repeat of a step whose result is recorded: never run it again
    outcome = run_attempt(engine, step, message.args, attempt, run_id, pos, in_flight_pos=pos)
    if outcome.status == "retry":
        index = "" if branch is None else branch.index
        retry = TimerRecord(timer_id=f"{run_id}#{pos}#retry#{index}", kind=TimerKind.RETRY.value,
                            run_id=run_id, due_at=engine.now() + (outcome.retry_in or 0.0), pos=pos,
                            data=embed({"step": step_name, "attempt": attempt + 1, "queue": step.queue,
                                        "branch": None if branch is None else branch.to_dict()}, message.args))
        # Branch attempts share the op position, so only the retry timer records them.
        event = None if branch is not None else outcome.attempt_event(run_id, pos, step_name, engine.now())
        store.record_attempt_failure(event, retry, backoff=outcome.retry_in or 0.0)
        return
    if branch is not None:
        from .fanout import finish_branch

        finish_branch(engine, run, step, branch, outcome)
        return
    event = EventRecord(run_id=run_id, seq=event_seq(pos), kind=OpKind.STEP.value, status=outcome.status,
                        at=engine.now(), name=step_name, data=outcome.data, error=outcome.error, attempt=attempt,
                        started_at=outcome.started_at)
    if store.record_event(event):
        engine.cache.remember(event)
        engine.resume(run_id, run=run, known_through=pos)


def _recorded(engine: Engine, run: RunRecord, message: StepMessage) -> bool:
    """Whether the step's outcome, or this attempt's failure, is recorded. A recorded branch
    is counted in its join again (its worker may have died before counting it)."""
    branch = message.branch
    if branch is None:
        # An attempt whose failure is recorded already ran (its retry is scheduled in the same
        # write): a recovery re-send or a second retry chain must not run it again.
        since = attempt_seq(message.pos, message.attempt) - 1
        return any(e.pos == message.pos for e in engine.store.read_history(message.run_id, after_seq=since))
    recorded = engine.store.get_branch(branch.join, branch.index)
    if recorded is None:
        return False
    from .fanout import settle_branch

    settle_branch(engine, run, message.step, branch, recorded.error)
    return True
