"""``parallel``: fan-out as step messages, fan-in as an idempotent DynamoDB join."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...errors import ParallelError
from ..model.control import Suspend
from ..model.failures import step_failure
from ..model.priority import step_priority
from ..model.records import Branch, EventRecord, OpKind, StepMessage, event_seq
from ..model.states import EventStatus, RunStatus
from ..replay.commands import Dispatch, InFlight, JoinBranch, RecordOutcome, SettleJoin, WakeAt
from ..replay.commit import apply, write_outcome
from ..replay.context import WorkflowContext
from .completion import Criteria, recovered, result_of, settled

if TYPE_CHECKING:
    from ...decorators import StepCall
    from ..engine import Engine


def join_id(run_id: str, pos: int) -> str:
    """The join of op ``pos`` of a run."""
    return f"{run_id}#{pos}"


def parallel(ctx: WorkflowContext, calls: tuple[StepCall, ...], return_exceptions: bool,
             criteria: Criteria | None = None) -> Any:
    """Run every call as its own step message; return the results in call order (with
    ``criteria``, a FanOutResult: see ``core.ops.completion``)."""
    name = f"{len(calls)} branches"
    pos, event = ctx.next_op(OpKind.PARALLEL, name)
    if event is None and not calls:
        event = ctx.record(pos, OpKind.PARALLEL, EventStatus.COMPLETED, name=name)
    recorded: set[int] = set()
    attempts: dict[int, int] = {}
    if event is None and ctx.recovering and ctx.run.cursor == pos:
        event, recorded = _recover(ctx, pos, name, calls, fail_fast=not return_exceptions, criteria=criteria)
        if event is None:  # a re-sent branch goes on from its last recorded failure, not from attempt 1
            for failed in ctx.store.read_history(join_id(ctx.run.run_id, pos)):
                attempts[failed.pos] = max(attempts.get(failed.pos, 0), failed.attempt or 0)
    if event is not None:
        return _results(ctx, pos, event, calls, return_exceptions) if criteria is None else \
            result_of(ctx, join_id(ctx.run.run_id, pos), event, calls)
    if ctx.in_flight(pos):
        raise ctx.halt(Suspend(InFlight()))
    messages = []
    for index, call in enumerate(calls):
        if index in recorded:
            continue
        step = call.step.definition
        args = ctx.encode([list(call.args), call.kwargs], f"arguments of branch {index} ({step.name})")
        branch = Branch(join_id(ctx.run.run_id, pos), index, len(calls), fail_fast=not return_exceptions,
                        criteria=None if criteria is None else criteria.carried, workflow=ctx.run.workflow)
        messages.append(StepMessage(step.name, ctx.run.run_id, pos, attempts.get(index, 0) + 1, args, branch=branch,
                                    queue=step.queue, priority=step_priority(step.priority, ctx.run.priority)))
    raise ctx.halt(Suspend(Dispatch(pos, messages, {"kind": OpKind.PARALLEL.value, "name": name,
                                                     "since": ctx.now()})))


def _recover(ctx: WorkflowContext, pos: int, name: str, calls: tuple[StepCall, ...],
             fail_fast: bool, criteria: Criteria | None) -> tuple[EventRecord | None, set[int]]:
    """Recovery of a dispatched fan-out: count the recorded branches in the join, then
    return the op's outcome if that settles it, else the indexes not to re-send."""
    if criteria is not None:
        results = ctx.store.branch_results(join_id(ctx.run.run_id, pos), len(calls))
        return recovered(ctx, join_id(ctx.run.run_id, pos), pos, name, criteria, results), {r.index for r in results}
    results, complete = apply(ctx.store, SettleJoin(join_id(ctx.run.run_id, pos), len(calls)))
    failed = next((r for r in results if r.error is not None), None) if fail_fast else None
    if failed is not None:
        step = calls[failed.index].step.name if failed.index < len(calls) else "?"
        data, error = _failure(failed.index, step, failed.error)
        return ctx.record(pos, OpKind.PARALLEL, EventStatus.FAILED, name=name, data=data, error=error), set()
    if complete:
        return ctx.record(pos, OpKind.PARALLEL, EventStatus.COMPLETED, name=name), set()
    return None, {r.index for r in results}


def _failure(index: int, step: str, error: str | None) -> tuple[str, str]:
    """The data and error of a fan-out's outcome failed by branch ``index``."""
    return (json.dumps({"index": index, "name": step, "error": error}),
            f"branch {index} ({step}) failed: {error}")


def _results(ctx: WorkflowContext, pos: int, event: Any, calls: tuple[StepCall, ...],
             return_exceptions: bool) -> list[Any]:
    if event.status == EventStatus.FAILED:
        info = json.loads(event.data or "{}")
        raise ParallelError(info.get("index", -1), info.get("name", "?"), info.get("error", event.error))
    results: list[Any] = []
    for record in ctx.store.branch_results(join_id(ctx.run.run_id, pos), len(calls)):
        name = calls[record.index].step.name if record.index < len(calls) else "?"
        if record.error is not None:
            failed = step_failure(name, record.error, record.data)  # a declared type, rebuilt, or StepFailed
            if not return_exceptions:
                raise ParallelError(record.index, name, record.error) from failed
            results.append(failed)
        else:
            results.append(ctx.decode(record.data))
    return results


def settle_branch(engine: Engine, run_id: str, step: str, branch: Branch, error: str | None) -> None:
    """Count a recorded branch in the join (idempotently); the write of the parent's
    outcome that completes (or, failing fast, fails) the fan-out resumes it, once. Reads no run
    item: only the branch that decides the fan-out reads the run, to resume it."""
    pos, name = branch.pos, f"{branch.total} branches"
    if branch.race:  # a step candidate of first_of: wake the run, whose replay decides the race (core.ops.first)
        # Only while the race is open: a run that moved on (the race decided) is left alone, since a
        # wake leases it and no resume would follow (the reconciler would recover it, counted).
        woken = apply(engine.store, WakeAt(run_id, pos))
        if woken is not None and woken.status == RunStatus.SUSPENDED and woken.cursor == pos:
            engine.resume(run_id, run=woken)
        return
    if branch.criteria is not None:  # a fan-out with completion criteria: the tally decides (core.ops.completion)
        if (decided := settled(engine, run_id, branch, name, error is not None)) is None:
            return
        outcome = decided
    elif error is not None and branch.fail_fast:
        data, text = _failure(branch.index, step, error)
        outcome = EventRecord(run_id, event_seq(pos), OpKind.PARALLEL.value, EventStatus.FAILED, engine.now(),
                              name=name, data=data, error=text)
    elif apply(engine.store, JoinBranch(branch.join, branch.index, branch.total)):
        outcome = EventRecord(run_id, event_seq(pos), OpKind.PARALLEL.value, EventStatus.COMPLETED, engine.now(),
                              name=name)
    else:
        return
    # once per fan-out, never after a cancel ended the run; remembered, so a process that saw the
    # earlier ops then replays with no history Query
    if write_outcome(engine, RecordOutcome(outcome, while_live=True)):
        run = engine.store.find_run(run_id)  # the resume's read of the run, once per fan-out
        since = (run.waiting or {}).get("since") if run is not None and run.cursor == pos else None
        if run is not None and outcome.status == EventStatus.COMPLETED and isinstance(since, (int, float)):
            engine.observer.joined(run, pos, branch.total, max(0.0, outcome.at - since))
        engine.resume(run_id, run=run, known_through=pos)
