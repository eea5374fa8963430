"""Replay a recorded run against the current code: the pre-deploy check for non-determinism.

The run's history is loaded into an in-memory store and its workflow function runs once
over it, as a resume would, without AWS and without running any step body (every step is
replaced by a guard for the replay). Each op must meet its recorded outcome (same kind
and name at the same position), every recorded op must be met, an op in flight must be
met at its position, and a run that ended by its own code must end there again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .. import codec
from ..core.model import registry
from ..core.model.control import ContinueAsNew, ReplayAborted, ReplayStopped, StaleHistory, Suspend
from ..core.model.records import EventRecord, OpKind, RunRecord, RunStatus
from ..core.model.tokens import derive_token, hash_token, new_nonce
from ..core.ops.async_workflow import call_workflow
from ..core.replay.context import WorkflowContext
from ..core.replay.history_cache import RunHistory
from ..errors import NonDeterminismError, SuspensionSwallowed
from ..export import RunExport, load_export
from .env import WorkflowEnv

#: Errors with which the engine, not the workflow's code, failed a run: its end is not replayed.
ENGINE_FAILURES = ("NonDeterminismError:", "SuspensionSwallowed:", "UnknownWorkflow:", "recovery attempts exhausted")


class StepBodyReached(BaseException):  # control flow: workflow code must not catch it
    """A replay reached a step with no recorded outcome; its body is never run."""


@dataclass(frozen=True)
class ReplayReport:
    """What a clean replay did.

    Attributes:
        run_id / workflow / status: the recorded run.
        ops: how many ops the replay met.
        ending: how the code ended: ``returned``, ``raised``, ``continued``, or
            ``waits at op N (kind 'name')`` for a run that had not ended there.
    """

    run_id: str
    workflow: str
    status: str
    ops: int
    ending: str


@contextlib.contextmanager
def redefinable() -> Iterator[None]:
    """Inside the block a new function may take a registered workflow or step name (a
    test's second version of a workflow, to replay old histories against it); the first
    one is back after the block."""
    with registry.scope(redefine=True):
        yield


def replay(source: str | Path | dict[str, Any]) -> ReplayReport:
    """Replay an export (a file from ``workflows runs export``, or its JSON data).

    Raises:
        NonDeterminismError: the code differs from the history (position, recorded, found).
        SuspensionSwallowed: the code caught a durable call's suspension.
        InvalidExport: the export cannot be read.
        UnknownWorkflow: the run's workflow is not registered (import its module first).
    """
    export = load_export(source)
    definition = registry.get_workflow(export.run.workflow)
    with WorkflowEnv(start=export.run.created_at) as env:
        for step in registry.steps():
            registry.replace_step(dataclasses.replace(step, fn=_guard(step.name)))
        history = _load(env, export)
        run = dataclasses.replace(export.run, lease_expires_at=env.clock.now() + env.settings.lease_seconds)
        ctx = WorkflowContext(env.engine, run, history)
        args, kwargs = codec.loads(run.args)
        _, raised = _run_once(ctx, definition.fn, args, kwargs)
    return _judge(export, history, ctx, raised)


def _guard(name: str) -> Any:
    def guard(*args: Any, **kwargs: Any) -> Any:
        raise StepBodyReached(name)
    return guard


def _load(env: WorkflowEnv, export: RunExport) -> RunHistory:
    """Store a live copy of the run, its history (hooks re-keyed for this env) and branches."""
    run = export.run
    env.store.create_run(RunRecord(run.run_id, run.workflow, RunStatus.PENDING.value, run.created_at,
                                   args=run.args, parent_run_id=run.parent_run_id, parent_pos=run.parent_pos))
    history = RunHistory()
    for event in export.history:
        if event.kind == OpKind.END:
            continue  # where an end took an op's position: the op itself is in flight there
        if event.kind == OpKind.HOOK and event.is_outcome:
            event = _rekeyed(env, event)
        env.store.record_event(event)
        history.add(event)
    for join, branches in export.branches.items():
        for branch in branches:
            env.store.record_branch(join, branch.index, branch.data, branch.error)
    return history


def _rekeyed(env: WorkflowEnv, event: EventRecord) -> EventRecord:
    """A hook outcome whose token this env can derive (the recorded one needs the production key)."""
    info = json.loads(event.data or "{}")
    nonce = new_nonce()
    token_hash = hash_token(derive_token(env.settings.hook_secret, event.run_id, event.pos, nonce))
    data = json.dumps({"nonce": nonce, "hash": token_hash, "expires_at": info.get("expires_at")})
    return dataclasses.replace(event, data=data)


def _run_once(ctx: WorkflowContext, fn: Any, args: list[Any],
              kwargs: dict[str, Any]) -> tuple[Any, BaseException | None]:
    """Run the workflow function once over the context; its value, or what it raised."""
    token = ctx.activate()
    try:
        return call_workflow(ctx, fn, args, kwargs), None  # an async def one is driven
    except (Suspend, ContinueAsNew, ReplayAborted, ReplayStopped, StaleHistory, StepBodyReached, Exception) as exc:
        return None, exc
    finally:
        ctx.deactivate(token)


def _describe(event: EventRecord | None, waiting: dict[str, Any] | None = None) -> str:
    if event is not None:
        return f"{event.kind} {event.name or ''}".strip()
    return f"{(waiting or {}).get('kind')} {(waiting or {}).get('name') or ''}".strip()


def _judge(export: RunExport, history: RunHistory, ctx: WorkflowContext, raised: BaseException | None) -> ReplayReport:
    run = export.run
    if ctx.fault is not None:
        raise ctx.fault
    if isinstance(ctx.fatal, NonDeterminismError):
        raise ctx.fatal
    if ctx.halted is not None and raised is not ctx.halted and not isinstance(raised, StepBodyReached):
        raise SuspensionSwallowed(*ctx.halted_op())
    waits = isinstance(raised, (Suspend, StepBodyReached, StaleHistory, ReplayStopped, ReplayAborted))
    met = ctx.pos
    if waits:
        ending = "waits at op {} ({})".format(*ctx.current_op())
    else:
        ending = "continued" if isinstance(raised, ContinueAsNew) else "raised" if raised is not None else "returned"
    missed = sorted(p for p in history.outcomes if p >= met)
    in_flight = run.waiting is not None and run.cursor >= met and run.cursor not in history.outcomes \
        and run.status not in (RunStatus.COMPLETED, RunStatus.CONTINUED)
    found = ctx.current_op()[1] if waits else f"the workflow's end ({ending})"
    if missed:
        raise NonDeterminismError(missed[0], _describe(history.outcomes[missed[0]]), found)
    if in_flight and not (waits and ctx.op[0] == run.cursor):
        raise NonDeterminismError(run.cursor, _describe(None, run.waiting), found)
    _check_end(run, waits, ending, ctx.op[0] if waits else met, found)
    return ReplayReport(run.run_id, run.workflow, run.status, met, ending)


def _check_end(run: RunRecord, waits: bool, ending: str, pos: int, found: str) -> None:
    """A run that ended by its own code (completed, continued, failed by the workflow) ends
    the same way again, with no op after its last recorded one."""
    expected = {RunStatus.COMPLETED.value: "returned", RunStatus.CONTINUED.value: "continued",
                RunStatus.FAILED.value: "raised"}.get(run.status)
    if expected is None or (run.status == RunStatus.FAILED and (run.error or "").startswith(ENGINE_FAILURES)):
        return
    if waits or ending != expected:
        raise NonDeterminismError(pos, f"the workflow's end ({expected}, run {run.status})", found)
