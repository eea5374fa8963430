"""Durable waits inside a workflow: sleep, hooks, signals and child runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...durations import Duration, to_seconds
from ...errors import ChildDetached, ConfigurationError, RegistrationError, WaitTimeout
from ..admission.delayed import start_time
from ..model.control import Suspend
from ..model.embed import embed, unembed
from ..model.failures import child_failure
from ..model.names import check_name
from ..model.records import EventRecord, HookRecord, OpKind, RunStatus, TimerKind, child_end_seq
from ..model.states import EventStatus, HookStatus
from ..model.tokens import derive_token, hash_token, new_nonce
from ..replay.children import ChildLink, ChildStart, check_child_options
from ..replay.commands import CreateHook, ExpireHook, Wait
from ..replay.commit import apply
from ..replay.context import WorkflowContext
from ..replay.updates import before_signal
from ..storage.chains import chain_anchor, current_run
from .async_workflow import awaitable

if TYPE_CHECKING:
    from ..model.registry import WorkflowDef


def _suspend(ctx: WorkflowContext, pos: int, kind: OpKind, name: str | None, due: float | None,
             timer_kind: TimerKind | None, **extra: Any) -> Suspend:
    waiting: dict[str, Any] = {"kind": kind.value, "name": name, **extra}
    timers = []
    if due is not None and timer_kind is not None:
        timer = ctx.timer(pos, timer_kind, due, {"name": name})
        waiting.update(due=due, timer=timer.timer_id)
        timers.append(timer)
    return ctx.halt(Suspend(Wait(pos, waiting, timers)))


def sleep(ctx: WorkflowContext, duration: Duration) -> None:
    """Suspend the run for ``duration``; a durable timer in DynamoDB wakes it, never early."""
    seconds = to_seconds(duration, what="sleep duration")
    pos, event = ctx.next_op(OpKind.SLEEP, None)
    if event is not None:
        return
    due = ctx.waiting_due(pos, OpKind.SLEEP) or ctx.now() + seconds
    raise _suspend(ctx, pos, OpKind.SLEEP, None, due, TimerKind.SLEEP, seconds=seconds)


@dataclass
class HookHandle:
    """A hook created by :func:`hook`; hand ``token`` to the outside world, then ``wait()``."""

    ctx: WorkflowContext
    name: str
    token: str
    token_hash: str
    expires_at: float | None

    def wait(self) -> Any:
        """Suspend until ``resume_hook(token, payload)``; return the payload (in an async
        workflow: an awaitable of it).

        Raises:
            WaitTimeout: the hook's timeout passed first.
        """
        return awaitable(f"hook {self.name!r} wait()", self._wait, self)

    def _wait(self) -> Any:
        ctx = self.ctx
        pos, event = ctx.next_op(OpKind.HOOK_WAIT, self.name)
        if event is None:
            hook = ctx.store.get_hook(self.token_hash)
            if hook is not None and hook.status == HookStatus.PENDING and hook.expires_at is not None \
                    and ctx.now() >= hook.expires_at and apply(ctx.store, ExpireHook(self.token_hash)):
                hook.status = HookStatus.EXPIRED
            if hook is None or hook.status == HookStatus.PENDING:
                raise _suspend(ctx, pos, OpKind.HOOK_WAIT, self.name, None, None, hook=self.token_hash)
            if hook.status == HookStatus.RESUMED:
                event = ctx.record(pos, OpKind.HOOK_WAIT, EventStatus.RESUMED, name=self.name, data=hook.payload)
            else:
                event = ctx.record(pos, OpKind.HOOK_WAIT, EventStatus.TIMED_OUT, name=self.name)
        if event.status == EventStatus.RESUMED:
            return ctx.decode(event.data)
        raise WaitTimeout(f"hook {self.name!r} timed out")


def hook(ctx: WorkflowContext, name: str, timeout: Duration | None, schema: Any) -> HookHandle:
    """Create a hook with an unguessable single-use token.

    The history keeps a random nonce, never the token: the token is derived from
    it with ``WORKFLOWS_HOOK_SECRET`` (see ``tokens``), so a replay gets it again.
    """
    pos, event = ctx.next_op(OpKind.HOOK, name)
    ctx.has_hooks = True
    secret = ctx.engine.settings.hook_secret
    if event is None:
        nonce = new_nonce()
        token_hash = hash_token(derive_token(secret, ctx.run.run_id, pos, nonce))
        expires = ctx.now() + to_seconds(timeout, what="hook timeout", allow_zero=False) if timeout else None
        data = json.dumps({"nonce": nonce, "hash": token_hash, "expires_at": expires})
        record = HookRecord(token_hash=token_hash, run_id=ctx.run.run_id, pos=pos, name=name,
                            status=HookStatus.PENDING, created_at=ctx.now(), expires_at=expires,
                            schema=schema_ref(schema))
        timer = ctx.timer(pos, TimerKind.HOOK_TIMEOUT, expires, {"hash": token_hash}) if expires else None
        created = apply(ctx.store, CreateHook(record, timer, data))
        if created is None:
            raise ctx.stopped("it ended before its hook was created")
        event = created
        ctx.history.add(event)
        ctx.engine.cache.remember(event)
    info = json.loads(event.data or "{}")
    token = info.get("token")  # histories written before tokens were derived hold the token itself
    if token is None:
        token = derive_token(secret, ctx.run.run_id, pos, info["nonce"])
        if hash_token(token) != info["hash"]:
            raise ConfigurationError(f"hook {name!r} of run {ctx.run.run_id} was created with another "
                                     "WORKFLOWS_HOOK_SECRET: set the same value on every worker")
    return HookHandle(ctx, name, token, info["hash"], info.get("expires_at"))


def schema_ref(schema: Any) -> str | None:
    """Describe a pydantic model so ``resume_hook`` can validate payloads against it."""
    if schema is None:
        return None
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise RegistrationError(f"hook schema must be a pydantic model class, got {schema!r}")
    return json.dumps({"ref": f"{schema.__module__}:{schema.__qualname__}",
                       "json": schema.model_json_schema()})


def wait_for_signal(ctx: WorkflowContext, name: str, timeout: Duration | None) -> Any:
    """Return the oldest unconsumed signal ``name`` sent to this run (to its continue-as-new chain:
    they are kept under the chain's anchor), waiting durably for one."""
    check_name(name, "signal name")  # a '#' would make it read another name's signals
    pos, event = ctx.next_op(OpKind.SIGNAL, name)
    if event is None:
        pending = [s for s in ctx.store.signals(chain_anchor(ctx.run), name)
                   if s.signal_key not in ctx.consumed_signals]
        if pending:
            first = pending[0]
            pos = before_signal(ctx, pos, name)  # updates sent before it are handled first (core.replay.updates)
            event = ctx.record(pos, OpKind.SIGNAL, EventStatus.RECEIVED, name=name,
                               data=embed({"key": first.signal_key}, first.payload or "null"))
        else:
            seconds = to_seconds(timeout, what="signal timeout") if timeout is not None else None
            due = ctx.waiting_due(pos, OpKind.SIGNAL) or (ctx.now() + seconds if seconds is not None else None)
            raise _suspend(ctx, pos, OpKind.SIGNAL, name, due, TimerKind.SIGNAL_TIMEOUT)
    if event.status == EventStatus.TIMED_OUT:
        raise WaitTimeout(f"no signal {name!r} arrived before the timeout")
    info, payload = unembed(event.data or "{}", "payload")
    ctx.consumed_signals.add(str(info.get("key", "")))
    return ctx.decode(payload)


@dataclass
class ChildHandle:
    """A child run started from a workflow; ``result()`` waits for it durably."""

    ctx: WorkflowContext
    run_id: str
    workflow: str
    start_pos: int  # the op that started the child: its end is recorded in this run's history there
    detached: bool = False  # started detached: never waited for (core.replay.children)

    def result(self) -> Any:
        """Suspend until the child run (or the last run of its continue-as-new chain) ends;
        return its result (in an async workflow: an awaitable of it).

        Raises:
            ChildFailed: the child failed, was cancelled or timed out.
            ChildDetached: the child was started detached.
        """
        if self.detached:
            raise ChildDetached(self.run_id)
        return awaitable(f"result() of child {self.workflow!r}", self._result, self)

    def _result(self) -> Any:
        ctx = self.ctx
        pos, event = ctx.next_op(OpKind.CHILD_RESULT, self.workflow)
        if event is None:
            ended = self._child_end()
            if ended is None:
                raise _suspend(ctx, pos, OpKind.CHILD_RESULT, self.workflow, None, None, child=self.run_id)
            data = ctx.adopt(ended.data)  # an older child's object (read from its run) copied to this run's prefix
            event = ctx.record(pos, OpKind.CHILD_RESULT, ended.status, name=self.workflow, data=data,
                               error=ended.error)
        if event.status == EventStatus.COMPLETED:
            return ctx.decode(event.data)
        raise child_failure(self.run_id, event.status, event.error, event.data)

    def _child_end(self) -> EventRecord | None:
        """How the child (its chain's last run) ended, or None while it runs.

        Its end wrote the record into this run's history (with the wake); a record written after
        the history was read is read by key. A child that ended before such records were written
        is read from its run items (which expire retention after its end)."""
        ctx = self.ctx
        ended = ctx.history.child_ends.get(self.start_pos) or ctx.store.get_event(ctx.run.run_id,
                                                                                  child_end_seq(self.start_pos))
        if ended is not None:
            return ended
        child = current_run(ctx.store, self.run_id)
        if not child.is_terminal:
            return None
        failed = None if child.status == RunStatus.COMPLETED else (child.error or child.status)
        return EventRecord(run_id=ctx.run.run_id, seq=child_end_seq(self.start_pos), kind=OpKind.CHILD_END.value,
                           status=child.status, at=ctx.now(), name=child.workflow, data=child.result, error=failed)


def start_child(ctx: WorkflowContext, workflow: WorkflowDef, args: tuple[Any, ...],
                kwargs: dict[str, Any], start: ChildStart | None = None) -> ChildHandle:
    """Start a child run, linked unless ``start.detached`` (``core.replay.children``), at once or at its
    ``delay`` / ``start_at``; its id is derived from the parent, so replays start nothing new.

    Raises:
        InvalidChildOptions: a bad ``parent_close_policy`` or ``detached``.
        InvalidStartTime, InvalidDuration: a bad ``delay`` or ``start_at``.
    """
    options = start or ChildStart()
    detached, policy = check_child_options(options.detached, options.parent_close_policy)
    pos, event = ctx.next_op(OpKind.CHILD, workflow.name)
    if event is None:
        child_id = f"{ctx.run.run_id}.{pos}"
        begins = start_time(options.delay, options.start_at, ctx.now())  # taken once: the start is recorded
        payload = ctx.encode([list(args), kwargs], f"arguments of child workflow {workflow.name!r}", child_id)
        fields: dict[str, Any] = {} if detached else {"parent_run_id": ctx.run.run_id, "parent_pos": pos}
        if begins is not None:
            fields["start_at"] = begins
        ctx.before_write()  # the child is written through the engine, not the replay's guarded store
        with ctx.infrastructure():
            ctx.engine.create_run(workflow, payload, run_id=child_id, **fields,
                                  priority=workflow.priority or ctx.run.priority)  # a child inherits the level
        data = ChildLink(child_id, policy, detached).to_data()
        event = ctx.record(pos, OpKind.CHILD, EventStatus.STARTED, name=workflow.name, data=data)
    child = ChildLink.from_data(event.data)
    ctx.children.append(child)
    return ChildHandle(ctx, child.run_id, workflow.name, pos, child.detached)
