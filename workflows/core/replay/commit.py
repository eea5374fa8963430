"""The committer: the one place a replay's command turns into store and transport calls.

:func:`commit` matches the command a resume decided (``core.replay.commands``); :func:`write_outcome`
writes an op's outcome, for every kind of step (inline, in place, sent, a fan-out branch) and
every other op, so an outcome has one write path.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import TYPE_CHECKING, Any

from ... import codec
from ...errors import describe
from ..admission.deferral import defer
from ..model.records import RunStatus, StepMessage, Suspension
from ..model.registry import get_workflow
from ..model.states import EventStatus, OpKind
from ..storage.chains import chain_anchor
from ..storage.tags import current_tags
from .children import close_timer, to_close
from .commands import (
    AnswerUpdate,
    ClaimRun,
    Command,
    Complete,
    Continue,
    CreateHook,
    Defer,
    Dispatch,
    DropRequests,
    ExpireHook,
    Fail,
    Halt,
    Immediate,
    InFlight,
    JoinBranch,
    MarkInFlight,
    Publish,
    Raise,
    RecordAttempt,
    RecordOutcome,
    RefuseUpdate,
    Reload,
    RenewLease,
    RunEnd,
    ScheduleRetry,
    SettleJoin,
    TallyBranch,
    Wait,
    WakeAt,
)
from .creation import record_timers
from .marks import marked, marks

if TYPE_CHECKING:
    from ..engine import Engine
    from ..model.records import EventRecord, RunRecord
    from ..storage.ports import Store
    from .context import WorkflowContext

log = logging.getLogger("workflows.engine")

#: The namespace of a successor's run id (derived from its predecessor's, so a retry makes the same).
RUN_NAMESPACE = uuid.UUID("6f1c2a52-3d4e-4b8a-9a51-0c7d2e9f4b10")


def commit(engine: Engine, run: RunRecord, command: Command, ctx: WorkflowContext | None = None) -> bool:
    """Carry out what a resume of ``run`` decided; False if a conditional write lost (read the
    run again and replay). ``ctx``: the replay that decided it (None: decided before one).

    An outcome the replay holds (an op it ran under its claim: ``WorkflowContext.hold``) goes with
    the run's end (``Complete``, ``Fail``: one write); a sent step's (``hold_sent``) goes with the
    dispatch of the next op (``core.replay.marks``); before any other command it is written alone.
    """
    if ctx is not None and ctx.pending is not None and not _carries(ctx, command):
        if not _write_held(engine, ctx, command):
            return True  # another resume recorded the op (it goes on), or the run ended
    if isinstance(command, Halt):
        if command.reason:
            log.warning("%s", command.reason)
        return True
    if isinstance(command, InFlight):
        return True
    if isinstance(command, Reload):
        if ctx is not None:
            engine.cache.forget(run.run_id)
        return False
    if isinstance(command, Raise):
        raise command.error
    if isinstance(command, Defer):
        return defer(engine, run, command.reason)
    if ctx is None:
        raise TypeError(f"{command!r} needs the replay that decided it")
    if isinstance(command, Dispatch):
        return _dispatch(engine, ctx, command)
    if isinstance(command, Wait):
        return _wait(engine, ctx, command)
    if isinstance(command, Fail):
        if command.log:
            log.error("run %s: %s", run.run_id, command.error)
        engine.end(run, RunEnd.failed(command.error, failure=command.failure), ctx=ctx)
        return True
    if isinstance(command, Complete):
        return _complete(engine, ctx, command)
    if isinstance(command, Continue):
        return _continue_as_new(engine, ctx, command)
    raise TypeError(f"unknown command {command!r}")


def write_outcome(engine: Engine, command: RecordOutcome, store: Store | None = None) -> bool:
    """Write an op's outcome once (``command``); True if this call wrote it (also a retry of
    its own write whose response was lost). ``store``: the replay's guarded store, if any."""
    store = store or engine.store
    event, branch = command.event, command.branch
    if branch is not None:  # a branch's result goes to its join; counting it is the join's (core.ops.fanout)
        return store.record_branch(branch.join, branch.index, event.data,
                                   event.error if event.status == EventStatus.FAILED else None)
    written = store.record_event_while_live(event) if command.while_live else store.record_event(event)
    if written:
        engine.cache.remember(event)
    return written


def apply(store: Store, command: Immediate) -> Any:
    """Write what a durable call needs answered before the workflow function goes on, through the
    replay's guarded ``store``: whether it applied (a :class:`CreateHook`: the op's record, or None
    when the run ended)."""
    if isinstance(command, Publish):
        if command.record.kind == OpKind.EVENT:
            return store.set_event(command.record, command.beside)
        return store.write_stream(command.record, command.beside)
    if isinstance(command, CreateHook):
        hook = command.hook
        return store.create_hook(hook, command.timer, hook.run_id, hook.pos, command.data)
    if isinstance(command, AnswerUpdate):
        return store.answer_update(command.record, command.answer, command.request, owner=command.owner)
    if isinstance(command, RefuseUpdate):
        return store.refuse_update(command.answer, command.request)
    if isinstance(command, DropRequests):
        store.delete_signals(command.anchor, command.keys)
        return True
    return _apply_flow(store, command)


def _apply_flow(store: Store, command: Immediate) -> Any:
    """The commands of hooks' expiry, in-flight marks and fan-out joins (see :func:`apply`)."""
    if isinstance(command, ExpireHook):
        return store.expire_hook(command.token_hash)
    if isinstance(command, MarkInFlight):
        return store.advance_run(command.run_id, command.pos, command.waiting, recovering=command.recovering,
                                 owner=command.owner)
    if isinstance(command, SettleJoin):
        return store.settle_join(command.join, command.total)
    if isinstance(command, JoinBranch):
        return store.join_branch(command.join, command.index, command.total)
    if isinstance(command, TallyBranch):
        return store.tally_branch(command.join, command.index, command.failed)
    if isinstance(command, WakeAt):
        return store.wake_run(command.run_id, at=command.pos)
    return _apply_run(store, command)


def _apply_run(store: Store, command: Immediate) -> Any:
    """The commands of a resume's claim and lease and a step's attempts (see :func:`apply`)."""
    if isinstance(command, ClaimRun):
        return store.claim_run(command.run_id, command.pos, command.owner, command.waiting,
                               as_created=command.as_created)
    if isinstance(command, RenewLease):
        return store.renew_lease(command.run_id, command.pos, since=command.since)
    if isinstance(command, RecordAttempt):
        return store.record_attempt(command.event, while_live=command.while_live)
    assert isinstance(command, ScheduleRetry)
    return store.schedule_retry(command.timer, command.backoff)


def _carries(ctx: WorkflowContext, command: Command) -> bool:
    """Whether ``command``'s write carries the outcome ``ctx`` holds."""
    assert ctx.pending is not None
    if ctx.pending_sent:
        return isinstance(command, Dispatch) and marks(ctx.pending, command)
    return isinstance(command, (Complete, Fail))


def _write_held(engine: Engine, ctx: WorkflowContext, command: Command) -> bool:
    """Write the outcome ``ctx`` holds alone, before ``command``; False if another resume recorded
    the op or the run ended (a store failure before ``Raise`` is left to its error)."""
    event = ctx.take_pending()
    if event is None:
        return True
    try:
        written = write_outcome(engine, RecordOutcome(event))
    except Exception:
        if isinstance(command, Raise):  # the store failed already: the resume raises its first error
            log.debug("run %s: the outcome of op %d was not written", ctx.run.run_id, event.pos, exc_info=True)
            return True
        raise
    if not written:
        engine.cache.forget(ctx.run.run_id)
    return written


def _dispatch(engine: Engine, ctx: WorkflowContext, command: Dispatch) -> bool:
    held = ctx.take_pending()
    if held is not None:
        return _dispatch_after(engine, ctx, held, command)
    # Mark the op in flight first: only the resume that wins sends. A crash
    # before the sends leaves a leased run that the reconciler re-dispatches.
    if not engine.store.advance_run(ctx.run.run_id, command.pos, command.waiting, recovering=ctx.recovering,
                                  owner=ctx.resume_id):
        return False
    send_calls(engine, ctx, command.calls)
    return True


def _dispatch_after(engine: Engine, ctx: WorkflowContext, held: EventRecord, command: Dispatch) -> bool:
    """Write a sent step's outcome marking the next op in flight, send that op's message, then move
    the run item's cursor to it (``core.replay.marks``): one write before the message leaves. Only the
    worker whose write wins sends; the cursor's move renews the lease and may lose to a recovery
    (which moved it already) or to the run's end (the op's worker finds the run ended)."""
    if not write_outcome(engine, RecordOutcome(marked(held, command))):
        engine.cache.forget(ctx.run.run_id)
        return True  # another worker recorded the step: it goes on
    send_calls(engine, ctx, command.calls)
    try:
        engine.store.advance_run(ctx.run.run_id, command.pos, command.waiting, owner=ctx.resume_id)
    except Exception:  # noqa: BLE001 - the op is sent and marked: its worker or the lease moves the run on
        log.warning("run %s: the cursor was not moved to op %d after its send; the run goes on",
                    ctx.run.run_id, command.pos, exc_info=True)
    return True


def _wait(engine: Engine, ctx: WorkflowContext, command: Wait) -> bool:
    run = ctx.run
    # A race's step messages go once: only the resume whose suspend first reaches the op sends them
    # (a recovery re-sends those without a result under its own claim).
    first = bool(command.calls) and not ctx.recovering
    at = Suspension(command.pos, command.waiting, command.timers)
    suspended = engine.store.suspend_run(run.run_id, at, run.wake_seq, lease=command.lease, first=first)
    if suspended:
        engine.observer.waiting(run, command.pos, command.waiting)
        # Sent after the suspend, whose lease covers a crash before the sends (recovery sends them again).
        send_calls(engine, ctx, command.calls)
    return suspended


def send_calls(engine: Engine, ctx: WorkflowContext, calls: list[StepMessage]) -> None:
    """Send a command's step messages (one, or a fan-out's branches batched), marked resent on recovery."""
    messages = [dataclasses.replace(m, resent=True) if ctx.recovering else m for m in calls]
    if len(messages) == 1:
        engine.transport.send_step(messages[0])
    elif messages:
        engine.transport.send_steps(messages)


def _complete(engine: Engine, ctx: WorkflowContext, command: Complete) -> bool:
    run, what = ctx.run, f"result of workflow {ctx.run.workflow!r}"
    try:
        result = codec.dumps(command.value, what=what, limit=engine.settings.max_payload_bytes)
    except Exception as exc:  # noqa: BLE001 - a result that cannot be stored fails the run, naming why
        engine.end(run, RunEnd.failed(describe(exc)), ctx=ctx)
        return True
    # a failed write of a large result's object is the store's failure: the resume is retried
    result = engine.payloads.offload(result, what, run.run_id)
    engine.end(run, RunEnd.completed(result), ctx=ctx)
    return True


def _continue_as_new(engine: Engine, ctx: WorkflowContext, command: Continue) -> bool:
    run = ctx.run
    new_id = str(uuid.uuid5(RUN_NAMESPACE, f"{run.run_id}:continue"))
    # Written to the successor's prefix (always written: a read of the same content is no write of it).
    args = engine.payloads.encode([list(command.args), command.kwargs], "continue_as_new arguments", new_id)
    definition = get_workflow(run.workflow)
    deadline = engine.now() + definition.max_duration if definition.max_duration else None
    # The successor carries the chain's tags and idempotency key (its guard expires after the chain's end),
    # and its anchor (core/storage/chains.py), under which the chain's signals are kept.
    record = engine.new_run_record(new_id, run.workflow, args, deadline=deadline, continued_from=run.run_id,
                                   parent_run_id=run.parent_run_id, parent_pos=run.parent_pos,
                                   schedule_id=run.schedule_id, fire_time=run.fire_time,
                                   tags=current_tags(ctx) or None, idempotency_key=run.idempotency_key,
                                   chain_head=chain_anchor(run), priority=run.priority)
    # The signals this run took are in its history (payload included): the successor must not take
    # them again. Deleted before the end, so a crash between leaves this run live to replay and retry.
    taken = sorted(key for key in ctx.consumed_signals if key)
    if taken:
        engine.store.delete_signals(chain_anchor(run), taken)
    # The end, the anchor's pointer and the successor are one write: a run cancelled meanwhile gets no
    # successor.
    # Its children are closed by their policies, as at any end (core.replay.children).
    closing = to_close(ctx.children, RunStatus.CONTINUED.value)
    closer = [close_timer(run.run_id, RunStatus.CONTINUED.value, engine.now())] if closing else []
    ended = engine.store.continue_run(run.run_id, record, [*record_timers(record), *closer])
    if ended is not None:
        engine.cache.forget(run.run_id)
        engine.after_end(ended, run, ctx, closing)
        engine.send_leased_resume(new_id, priority=run.priority)
    return True
