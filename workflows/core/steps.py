"""The kinds of step, over one attempt path (``attempts``): inline steps run inside the
resume; dispatched, in-place and fan-out-branch steps run from a step message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..errors import Suspend
from ..registry import StepDef, get_step
from .attempts import Slot, attempt_ran, current_step, record_failed_attempt, run_attempt, schedule_retry
from .context import Wait, step_value
from .flow import admission
from .records import EventRecord, OpKind, RunRecord, StepMessage, TimerKind, event_seq

if TYPE_CHECKING:
    from .context import WorkflowContext
    from .engine import Engine

__all__ = ["current_step", "execute_step", "run_inline", "run_worker_task"]


def run_inline(ctx: WorkflowContext, pos: int, step: StepDef, args_json: str) -> Any:
    """Run an inline step in this resume: one durable write, no broker hop. A failed attempt
    that will be retried is recorded while this resume holds the run, then the run suspends
    until its wake timer."""
    engine = ctx.engine
    due = ctx.waiting_due(pos, OpKind.STEP)
    waiting = {"kind": OpKind.STEP.value, "name": step.name}
    if due is not None and engine.now() < due:
        raise ctx.halt(Suspend(Wait(pos, {**waiting, "due": due}, [ctx.timer(pos, TimerKind.WAKE, due)])))
    if not ctx.owns_run:
        ctx.claim(pos, waiting)
    attempt = ctx.history.attempts.get(pos, 0) + 1
    with ctx.infrastructure():  # the step's own errors are classified inside; a store's escape
        outcome = run_attempt(engine, step, args_json, attempt, ctx.run.run_id, pos, workflow=ctx.run.workflow)
    if outcome.retry_in is None:
        event = ctx.record(pos, OpKind.STEP, outcome.status, name=step.name, data=outcome.data,
                           error=outcome.error, attempt=attempt, started_at=outcome.started_at, exclusive=True)
        return step_value(ctx, event)
    failed = record_failed_attempt(ctx.store, Slot(ctx.run.run_id, pos), step.name, outcome, engine.now())
    if failed is None:
        # Another resume recorded this attempt first (this one claimed the run after that one
        # suspended it, from a history read before), or the run ended. This resume holds the
        # run: it suspends it until the retry is due rather than leave it to its lease (a
        # suspend that finds the run ended fails, and the replay that follows sees the end).
        engine.cache.forget(ctx.run.run_id)
    else:
        engine.cache.remember(failed)
    due = engine.now() + outcome.retry_in
    raise ctx.halt(Suspend(Wait(pos, {**waiting, "due": due}, [ctx.timer(pos, TimerKind.WAKE, due)])))


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
    """Body of a step message (dispatched, in place, or a branch): run it, record the outcome,
    continue the run in place.

    ``redelivered``: the broker may have delivered this message before; then what is
    recorded is read first, so a step with a recorded result, or an attempt with a recorded
    failure, never runs again. A first delivery skips that read (the writes are conditional).
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
        return  # a repeat of a step whose result (or this attempt's failure) is recorded: never run it again
    with admission(engine, step, message) as admitted:
        if not admitted:
            return  # waits off the thread for a slot or a token (docs/flow-control.md)
        outcome = run_attempt(engine, step, message.args, attempt, run_id, pos, in_flight_pos=pos,
                              workflow=run.workflow, branch=None if branch is None else branch.index)
    if outcome.retry_in is not None:
        schedule_retry(engine, message, step, outcome)
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
    if branch is not None and (recorded := engine.store.get_branch(branch.join, branch.index)) is not None:
        from .fanout import settle_branch

        settle_branch(engine, run, message.step, branch, recorded.error)
        return True
    # An attempt whose failure is recorded already ran (its retry is scheduled before the
    # record): a recovery re-send or a second retry chain must not run it again.
    return attempt_ran(engine.store, Slot.of(message), message.attempt)
