"""``WorkflowEnv``: the engine in process on the in-memory ports, with a virtual clock.

Workflow and step code runs unchanged. Sleeps, retry backoffs, wait timeouts, hook
expiries and schedule fires are timers on a :class:`~workflows.memory.ManualClock`, so
the kit skips time to the next one instead of waiting for it.
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from ..client import (
    RunHandle,
    cancel_run,
    complete_hook,
    has_ended,
    iter_runs,
    last_of_chain,
    outcome,
    signal_run,
    start_with_options,
)
from ..core.background.update_requests import answer_value, lookup_answer, send_update, timed_out
from ..core.engine import Engine
from ..core.model import registry
from ..core.model.failures import Failure
from ..core.ops.events import check_key
from ..core.storage.timeline import step_rows
from ..durations import Duration, to_seconds
from ..errors import EventTimeout, Stalled, UpdateTimeout
from ..events import StreamPage, lookup_event, read_stream
from ..memory import ManualClock, MemoryStore
from ..options import StartOptions, split_start_options
from ..runtime import use_engine
from ..schedules import ScheduleInfo
from ..settings import Settings
from .driver import MAX_ROUNDS, Driver
from .faults import FailureInjection, inject_failures
from .hooks import find_token
from .transport import QueueTransport

#: Where the virtual clock starts unless told: 2027-01-15T08:00:00Z.
DEFAULT_START = 1_800_000_000.0


@dataclass(frozen=True)
class StepView:
    """One step op of a run, as ``run.steps()`` reports it."""

    pos: int
    name: str
    status: str
    attempts: int
    error: str | None
    result: Any
    failure: Failure | None = None  # a failed step's type, message, traceback and chain (core.model.failures)


class EnvRunHandle(RunHandle):
    """A run started in a :class:`WorkflowEnv`; ``result()`` drives the env until it ends."""

    def __init__(self, run_id: str, env: WorkflowEnv) -> None:
        super().__init__(run_id)
        self.env = env

    def result(self, timeout: float | None = None, poll: float = 0.1) -> Any:
        """Run the env (skipping time) until this run ends; return its result (see
        :meth:`WorkflowEnv.run_until_complete`). ``timeout`` and ``poll`` are ignored."""
        return self.env.run_until_complete(self)

    def get_event(self, key: str, timeout: float | str | None = None, poll: float = 0.1) -> Any:
        """Run the env (skipping time) until this run sets event ``key`` (see
        :meth:`WorkflowEnv.get_event`; ``timeout`` is virtual time, ``poll`` is ignored)."""
        return self.env.get_event(self, key, timeout)

    def update(self, name: str, payload: Any = None, *, update_id: str | None = None,
               timeout: float | str | None = None, poll: float = 0.1) -> Any:
        """Send update ``name`` and run the env until this run answers (see :meth:`WorkflowEnv.update`;
        ``timeout`` is virtual time, ``poll`` is ignored)."""
        return self.env.update(self, name, payload, update_id=update_id, timeout=timeout)

    def fork(self, at: int, *, idempotency_key: str | None = None) -> EnvRunHandle:
        """A fork of this run (see :meth:`RunHandle.fork`), driven by the env like this one."""
        return EnvRunHandle(super().fork(at, idempotency_key=idempotency_key).run_id, self.env)

    def rerun(self, *, idempotency_key: str | None = None) -> EnvRunHandle:
        """A rerun of this failed run (see :meth:`RunHandle.rerun`), driven by the env like this one."""
        return EnvRunHandle(super().rerun(idempotency_key=idempotency_key).run_id, self.env)


def _run_id(run: RunHandle | str) -> str:
    return run if isinstance(run, str) else run.run_id


class WorkflowEnv:
    """An engine on the in-memory ports with a virtual clock; use it as a context manager.

    While entered, it is the process's engine (``wf.start()``, ``get_run()``,
    ``create_schedule()``... act on it), and registrations made in the block (a
    workflow defined inside a test, an injected failure) are forgotten at its end.

    Args:
        start: where the virtual clock starts (an aware datetime or epoch seconds).
        settings: the engine's settings (default: defaults with a random hook key).
        deleting: as on AWS, moving the clock deletes items past their TTL and payload objects
            past the bucket's lifecycle rule (at their earliest); False keeps everything.
    """

    def __init__(self, *, start: datetime | float | None = None, settings: Settings | None = None,
                 deleting: bool = True) -> None:
        epoch = start.timestamp() if isinstance(start, datetime) else start
        self.clock = ManualClock(DEFAULT_START if epoch is None else float(epoch))
        self.settings = settings or Settings(hook_secret=secrets.token_urlsafe(32))
        self.store = MemoryStore(self.settings, self.clock)
        self.transport = QueueTransport()
        self.engine = Engine(self.store, self.transport, self.settings, clock=self.clock)
        from workflows.core.background.firing import ensure_listener

        ensure_listener(self.engine)
        self.driver = Driver(self.engine, self.store, self.transport, self.clock, deleting=deleting)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> WorkflowEnv:
        self._stack.enter_context(registry.scope())
        self._stack.enter_context(use_engine(self.engine))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    # -- time -----------------------------------------------------------------------------
    @property
    def now(self) -> datetime:
        """The virtual time, an aware UTC datetime."""
        return datetime.fromtimestamp(self.clock.now(), timezone.utc)

    def advance(self, by: Duration) -> None:
        """Move the virtual clock forward by ``by`` (seconds, ``"3d"`` or a timedelta), firing
        every timer and schedule due on the way at its own moment, and running what they start."""
        target = self.clock.now() + to_seconds(by, what="advance")
        self.driver.settle()
        while (due := self.driver.next_due(schedules=True)) is not None and due <= target:
            self.driver.jump_to(due)
            self.driver.settle()
        self.driver.jump_to(target)
        self.driver.settle()

    def run_until_idle(self) -> None:
        """Deliver every message; when none is queued, skip to the next due timer and fire it;
        stop when nothing is queued and no timer is left. Schedules fire only when due now
        (they recur forever): use :meth:`advance` to let them fire."""
        for _ in range(MAX_ROUNDS):
            self.driver.settle()
            due = self.driver.next_due(schedules=False)
            if due is None:
                return
            self.driver.jump_to(due)
        raise Stalled(f"still busy after {MAX_ROUNDS} timers")

    def run_until_complete(self, run: RunHandle | str) -> Any:
        """Run until ``run`` (the last run of its continue-as-new chain) ends, skipping time to
        each next timer; return its result.

        Raises:
            RunFailed, RunCancelled, RunTimedOut: how the run ended.
            Stalled: the run waits for a hook or a signal (or a child that does) and no
                timer is due: resume the hook or send the signal first.
        """
        run_id = _run_id(run)
        for _ in range(MAX_ROUNDS):
            self.driver.settle()
            record = last_of_chain(self.store, run_id)
            if has_ended(record):
                return outcome(record)
            due = self.driver.next_due(schedules=False)
            if due is None:
                waiting = record.waiting or {}
                what = f"{waiting.get('kind')} {waiting.get('name') or ''}".strip() or record.status
                raise Stalled(f"run {record.run_id} waits ({what}) and no timer is due: "
                              "resume its hook or send its signal first")
            self.driver.jump_to(due)
        raise Stalled(f"run {run_id} did not end after {MAX_ROUNDS} timers")

    def get_event(self, run: RunHandle | str, key: str, timeout: Duration | None = None) -> Any:
        """Run the env (skipping time to each next timer) until ``run`` sets event ``key``; return
        its latest value.

        Raises:
            EventTimeout: ``timeout`` (virtual time) passed first.
            EventNotSet: the run ended without setting ``key``.
            Stalled: the run waits for a hook or a signal and no timer is due.
        """
        run_id, limit = _run_id(run), None
        check_key(key)
        if timeout is not None:
            limit = self.clock.now() + to_seconds(timeout, what="get_event timeout")
        for _ in range(MAX_ROUNDS):
            self.driver.settle()
            found, text = lookup_event(self.store, run_id, key)
            if found:
                return self.engine.payloads.decode(text)
            due = self.driver.next_due(schedules=False)
            if limit is not None and (due is None or due > limit):
                self.driver.jump_to(max(limit, self.clock.now()))
                raise EventTimeout(f"run {run_id} did not set event {key!r} within {timeout}")
            if due is None:
                raise Stalled(f"run {run_id} has not set event {key!r} and no timer is due: "
                              "resume its hook or send its signal first")
            self.driver.jump_to(due)
        raise Stalled(f"run {run_id} did not set event {key!r} after {MAX_ROUNDS} timers")

    def update(self, run: RunHandle | str, name: str, payload: Any = None, *, update_id: str | None = None,
               timeout: Duration | None = None) -> Any:
        """Send update ``name`` into ``run`` and run the env (skipping time to each next timer) until
        it answers; return the answer (see :func:`workflows.update_run`; ``timeout`` is virtual time).

        Raises:
            UpdateRefused, UpdateFailed, UpdateRunEnded: as ``update_run``.
            UpdateTimeout: ``timeout`` (virtual time) passed first.
            Stalled: no answer and no timer is due (the run waits on something else).
        """
        update_id, first = send_update(self.engine, _run_id(run), name, payload, update_id)
        limit = None if timeout is None else self.clock.now() + to_seconds(timeout, what="update timeout")
        for _ in range(MAX_ROUNDS):
            self.driver.settle()
            answer = lookup_answer(self.store, first, update_id)
            if answer is not None:
                return self.engine.payloads.decode(answer_value(answer))
            due = self.driver.next_due(schedules=False)
            if limit is not None and (due is None or due > limit):
                self.driver.jump_to(max(limit, self.clock.now()))
                raise UpdateTimeout(timed_out(first, update_id, str(timeout)))
            if due is None:
                raise Stalled(f"run {first} has not answered update {update_id!r} and no timer is due")
            self.driver.jump_to(due)
        raise Stalled(f"run {first} did not answer update {update_id!r} after {MAX_ROUNDS} timers")

    def read_stream(self, run: RunHandle | str, offset: int = 0) -> StreamPage:
        """The run's progress stream from ``offset``, as stored now (does not run the env)."""
        return read_stream(_run_id(run), offset)

    # -- runs -----------------------------------------------------------------------------
    def start(self, workflow: Any, *args: Any, **kwargs: Any) -> EnvRunHandle:
        """Start a run of ``workflow`` (the object or its name) with these arguments; nothing runs
        until the env does. Start options: :meth:`apply_async` (or, deprecated, among ``kwargs``
        when no parameter of the workflow has their name, as :func:`workflows.start`)."""
        definition = registry.get_workflow(workflow if isinstance(workflow, str) else workflow.name)
        kwargs, options = split_start_options(definition.fn, kwargs)
        return EnvRunHandle(start_with_options(definition, args, kwargs, options).run_id, self)

    def apply_async(self, workflow: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None,
                    **options: Any) -> EnvRunHandle:
        """Start a run with ``args``, ``kwargs`` and start options, as :func:`workflows.apply_async`."""
        definition = registry.get_workflow(workflow if isinstance(workflow, str) else workflow.name)
        return EnvRunHandle(start_with_options(definition, tuple(args), dict(kwargs or {}),
                                               StartOptions(**options)).run_id, self)

    def runs(self, workflow: Any = None, status: str | None = None) -> list[RunHandle]:
        """Every run (of ``workflow``, with ``status``), oldest first."""
        found = list(iter_runs(workflow=workflow, status=status, limit=1000))
        return [EnvRunHandle(r.run_id, self) for r in sorted(found, key=lambda r: (r.created_at, r.run_id))]

    def signal(self, run: RunHandle | str, name: str, payload: Any = None) -> None:
        """Send a signal (it is delivered when the env runs)."""
        signal_run(self.engine, _run_id(run), name, payload)

    def cancel(self, run: RunHandle | str) -> None:
        """Request cancellation (it happens when the env runs)."""
        cancel_run(self.engine, _run_id(run))

    def resume_hook(self, run: RunHandle | str, hook: str, payload: Any = None) -> None:
        """Complete the run's hook called ``hook`` (or with that token) with ``payload``.

        Raises:
            HookNotFound, HookExpired, HookClosed, HookAlreadyResumed, HookPayloadInvalid.
        """
        complete_hook(self.engine, find_token(self.engine, _run_id(run), hook), payload)

    def steps(self, run: RunHandle | str) -> list[StepView]:
        """The run's step ops: name, status, attempts, error, result."""
        run_id = _run_id(run)
        rows = step_rows(self.store.get_run(run_id), self.store.read_history(run_id),
                         self.engine.payloads.resolve_record)
        return [StepView(r["seq"], r["name"], r["status"], r["attempts"], r["error"], r["result"],
                         Failure.from_dict(r["failure"]) if r["failure"] else None) for r in rows]

    def result(self, run: RunHandle | str) -> Any:
        """The decoded result of a completed run, as stored (does not run the env)."""
        return self.engine.payloads.decode(self.store.get_run(_run_id(run)).result)

    # -- faults and schedules -------------------------------------------------------------
    def fail_step(self, step: Any, times: int | None = 1,
                  error: BaseException | type[BaseException] | None = None) -> FailureInjection:
        """Make the next ``times`` attempts of ``step`` (a name or a ``@step``; every attempt
        if None) raise ``error`` instead of running its body; the retry policy applies."""
        return inject_failures(step, times, error)

    def create_schedule(self, workflow: Any, **options: Any) -> ScheduleInfo:
        """:func:`workflows.create_schedule` on the env's store and virtual clock; its fires
        happen as :meth:`advance` moves the clock past them."""
        from ..schedules import create_schedule

        return create_schedule(workflow, **options)

    @property
    def dead_letters(self) -> list[tuple[str, dict[str, Any]]]:
        """Messages the engine set aside (reason, detail): none in a healthy test."""
        return self.transport.dead_letters
