"""The kinds of step, over one attempt path (``attempts``): inline steps run inside the
resume; in-place steps run inside the resume as a sent step would (``run_in_place``);
dispatched and fan-out-branch steps run from a step message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..execution.attempts import (
    Attempt,
    LeaseRenewal,
    StepAddress,
    attempt_ran,
    current_step,
    record_failed_attempt,
    run_attempt,
    schedule_retry,
)
from ..execution.flow import admission
from ..model.control import StaleHistory, Suspend
from ..model.priority import step_priority
from ..model.records import Branch, OpKind, RunRecord, StepMessage, TimerKind
from ..model.registry import StepDef, check_arguments, get_step
from ..model.states import EventStatus
from ..replay.commands import Dispatch, InFlight, MarkInFlight, Wait
from ..replay.commit import apply, write_outcome
from ..replay.context import step_value
from ..replay.observer import StepAttempt
from .completion import decided
from .fanout import settle_branch

if TYPE_CHECKING:
    from ..engine import Engine
    from ..replay.context import WorkflowContext

__all__ = ["call_step", "current_step", "execute_step", "run_in_place", "run_inline", "run_worker_task"]


def call_step(ctx: WorkflowContext, step: StepDef, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A step call in the workflow ``ctx`` runs: the recorded result, an inline execution, or a dispatch."""
    pos, event = ctx.next_op(OpKind.STEP, step.name)
    if event is not None:
        return step_value(ctx, event)
    check_arguments(step.fn, args, kwargs, f"step {step.name!r}")
    args_json = ctx.encode([list(args), kwargs], f"arguments of step {step.name!r}")
    if step.inline:
        return run_inline(ctx, pos, step, args_json)
    if ctx.in_flight(pos):
        raise ctx.halt(Suspend(InFlight()))
    # A recovery re-send goes on from the last recorded failure, not from attempt 1.
    attempt = ctx.history.attempts.get(pos, 0) + 1
    call = StepMessage(step.name, ctx.run.run_id, pos, attempt, args_json, queue=step.queue,
                       priority=step_priority(step.priority, ctx.run.priority))
    waiting = {"kind": OpKind.STEP.value, "name": step.name, "since": ctx.now()}
    if not ctx.recovering and ctx.engine.in_place.admits(call, ctx.engine.transport.runs_here):
        return run_in_place(ctx, step, call, waiting)
    raise ctx.halt(Suspend(Dispatch(pos, [call], waiting)))



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
    ctx.flush()  # the previous step's outcome is written before this one's body runs
    attempt = ctx.history.attempts.get(pos, 0) + 1
    with ctx.infrastructure():  # the step's own errors are classified inside; a store's escape
        outcome = run_attempt(engine, step, StepAttempt(ctx.run.run_id, ctx.run.workflow, step.name, pos, attempt),
                              args_json)
    if outcome.retry_in is None:
        # a plain write (the hot path): this resume holds the run
        event = ctx.recorded(StepAddress(ctx.run.run_id, pos).outcome(step.name, outcome, engine.now()),
                             exclusive=True)
        return step_value(ctx, event)
    failed = record_failed_attempt(ctx.store, StepAddress(ctx.run.run_id, pos), step.name, outcome, engine.now())
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
    """Run the body of a worker task; its resumes may run dispatched steps in place (see ``in_place``)."""
    with engine.in_place.session(engine.settings.in_place_seconds):
        body()


def run_in_place(ctx: WorkflowContext, step: StepDef, message: StepMessage, waiting: dict[str, Any]) -> Any:
    """Run a dispatched step in this resume's thread while the workflow function waits on it:
    run it as its message would be, record its outcome and return it.

    A step with no flow limits runs under this resume's claim of the run (``ctx.claim``: one
    write per resume, as for inline steps), so its outcome is its one write; one that may wait
    for a slot or token is marked in flight first, as for a send. A retry marks the step in
    flight (the claim released) before its timer is stored. A retry, a wait or a lost write
    stops the function (the step is in flight: its timer or the recorder goes on from there)."""
    engine, pos = ctx.engine, message.pos
    if ctx.run.deadline is not None and engine.now() >= ctx.run.deadline:
        raise ctx.halt(StaleHistory(pos))  # the resume re-reads the run and times it out
    if step.limits is not None:
        _mark_in_flight(ctx, pos, waiting)
    elif not ctx.owns_run:
        ctx.claim(pos, waiting)
    ctx.flush()  # the previous step's outcome is written before this one's body runs
    with ctx.outside(), ctx.infrastructure():  # the body runs as a sent step's: in no workflow
        outcome = admitted_attempt(engine, step, message, ctx.run.workflow, lease_pos=ctx.run.cursor)
    if outcome is not None and outcome.retry_in is not None:
        if ctx.owns_run:  # its retry timer resumes the run: no resume may wait on this one's claim
            _mark_in_flight(ctx, pos, waiting, recovering=True)
        with ctx.outside(), ctx.infrastructure():
            schedule_retry(engine, message, step, outcome)
    if outcome is None or outcome.retry_in is not None:
        raise ctx.halt(Suspend(InFlight()))
    event = ctx.recorded(StepAddress.of(message).outcome(step.name, outcome, engine.now()), exclusive=True)
    return step_value(ctx, event)


def _mark_in_flight(ctx: WorkflowContext, pos: int, waiting: dict[str, Any], recovering: bool = False) -> None:
    """Mark op ``pos`` in flight (``Store.advance_run``, which releases a claim); ``recovering``:
    also when this resume's claim put the cursor at ``pos``."""
    if not apply(ctx.store, MarkInFlight(ctx.run.run_id, pos, waiting, ctx.resume_id, recovering)):
        raise ctx.halt(StaleHistory(pos))  # moved on, ended or cancelled: re-read the run
    ctx.advanced(pos, waiting)


def admitted_attempt(engine: Engine, step: StepDef, message: StepMessage, workflow: str, *,
                     lease_pos: int | None = None) -> Attempt | None:
    """Run one attempt of a sent step once its concurrency slot and rate token are taken;
    None when it waits for them off the thread (docs/flow-control.md). ``lease_pos``: the
    run's cursor its lease is renewed at (default: the step's position, or the one before it,
    where the cursor stays until the send that marked the step in flight moves it: ``core.replay.marks``)."""
    branch = message.branch
    since = message.pos - 1 if lease_pos is None and branch is None else None
    with admission(engine, step, message) as admitted:
        if not admitted:
            return None
        op = StepAttempt(message.run_id, workflow, step.name, message.pos, message.attempt,
                         None if branch is None else branch.index)
        lease = LeaseRenewal(message.pos if lease_pos is None else lease_pos, since)
        return run_attempt(engine, step, op, message.args, lease)


def execute_step(engine: Engine, message: StepMessage, *, redelivered: bool = True,
                 run: RunRecord | None = None) -> None:
    """Body of a step message (dispatched, or a branch): run it, then resume the run from its
    outcome, which is recorded with what the replay decides (whose next steps may run in place).

    ``redelivered``: the broker may have delivered this message before; then what is
    recorded is read first, so a step with a recorded result, or an attempt with a recorded
    failure, never runs again. A first delivery skips that read (the writes are conditional).
    ``run``: a read of the run made already, to save one. A fan-out branch reads no run item
    (``_execute_branch``).
    """
    run_id, pos, branch = message.run_id, message.pos, message.branch
    step = get_step(message.step)
    if branch is not None:
        _execute_branch(engine, message, step, branch, redelivered)
        return
    store = engine.store
    run = run or store.find_run(run_id)
    if run is None:
        engine.transport.dead_letter("step message for an unknown run",
                                     {"step": message.step, "run_id": run_id, "pos": pos, "attempt": message.attempt})
        return
    if run.is_terminal:
        return
    if run.cancel_requested:
        engine.resume(run_id, run=run)
        return
    if run.cursor > pos or (redelivered and _recorded(engine, message)):
        return  # a repeat of a step whose result (or this attempt's failure) is recorded: never run it again
    outcome = admitted_attempt(engine, step, message, run.workflow)
    if outcome is None:
        return
    if outcome.retry_in is not None:
        schedule_retry(engine, message, step, outcome)
        return
    # Held, not written: the replay that goes on from it writes it with the next op's dispatch
    # (one write before that message leaves: ``core.replay.marks``), else alone before anything else.
    engine.resume(run_id, run=run, held=StepAddress.of(message).outcome(step.name, outcome, engine.now()).event)


def _execute_branch(engine: Engine, message: StepMessage, step: StepDef, branch: Branch, redelivered: bool) -> None:
    """Body of a fan-out branch's message, reading no run item.

    What a read of the run protected is kept by conditions: a branch of an ended run records nothing
    in its run's history (a failed attempt and a retry timer are written only while the run is live,
    the fan-out's outcome too), and its join writes land on items the retention sweep created with
    the run's TTL (``RetentionWrites._close_join``: its result's put loses to a closed slot). A
    branch of a cancelled or ended run still runs its body once delivered (the run's cancel no
    longer stops branches already sent); a repeat is caught as for a sent step."""
    if redelivered and _recorded(engine, message):
        return  # its result (or this attempt's failure) is recorded, or its slot was closed
    if branch.criteria is not None:
        if decided(engine, branch):
            return  # the fan-out is decided (its run went on): a branch not started yet is not run
    outcome = admitted_attempt(engine, step, message, branch.workflow or "")
    if outcome is None:
        return
    if outcome.retry_in is not None:
        schedule_retry(engine, message, step, outcome)
        return
    error = outcome.error if outcome.status == EventStatus.FAILED else None
    if not write_outcome(engine, StepAddress.of(message).outcome(step.name, outcome, engine.now())):
        recorded = engine.store.get_branch(branch.join, branch.index)  # only when the put lost
        if recorded is None or recorded.closed:
            return  # the retention sweep closed the join: the run ended
        error = recorded.error
    settle_branch(engine, message.run_id, step.name, branch, error)


def _recorded(engine: Engine, message: StepMessage) -> bool:
    """Whether the step's outcome, or this attempt's failure, is recorded. A recorded branch
    is counted in its join again (its worker may have died before counting it); a closed slot
    (``BranchRecord.closed``) counts as recorded: its run has ended."""
    branch = message.branch
    if branch is not None and (recorded := engine.store.get_branch(branch.join, branch.index)) is not None:
        if not recorded.closed:
            settle_branch(engine, message.run_id, message.step, branch, recorded.error)
        return True
    # An attempt whose failure is recorded already ran (its retry is scheduled before the
    # record): a recovery re-send or a second retry chain must not run it again.
    return attempt_ran(engine.store, StepAddress.of(message), message.attempt)
