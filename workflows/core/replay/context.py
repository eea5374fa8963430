"""The replay context: what a workflow's durable calls do while its function runs.

Op ``n`` of a run is the n-th durable call (step, sleep, hook, wait, child,
parallel). A recorded outcome is returned as it was; the first op without one
either runs (inline steps, hooks, starts of children) or asks the engine to
dispatch and suspend, by raising :class:`Suspend` with an action.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import uuid
from typing import TYPE_CHECKING, Any, Iterator, TypeVar, cast

from ... import codec
from ...errors import NonDeterminismError, describe
from ..model.control import ReplayAborted, ReplayStopped, StaleHistory, Suspend
from ..model.failures import step_failure
from ..model.lease import LeaseSchedule
from ..model.records import EventRecord, OpKind, RunRecord, TimerKind, TimerRecord, event_seq, op_timer_id
from ..model.states import EventStatus
from ..storage.payloads import reference_of
from .children import ChildLink
from .commands import ClaimRun, RecordOutcome, RenewLease
from .commit import apply, write_outcome
from .creation import still_created
from .guard import GuardedStore
from .history_cache import RunHistory
from .updates import UpdateState, before_op

if TYPE_CHECKING:
    from ..engine import Engine
    from ..storage.ports import Store

Signal = TypeVar("Signal", bound=BaseException)

_current: contextvars.ContextVar[WorkflowContext | None] = contextvars.ContextVar("workflow", default=None)


def current_workflow() -> WorkflowContext | None:
    """Return the context of the workflow running in this thread, if any."""
    return _current.get()


#: How often a resume claims again when each claim is answered after a third of the lease.
MAX_SLOW_CLAIMS = 3
#: The store's reads that a replay may make while it holds a sent step's outcome unwritten.
SENT_HOLD_READS = frozenset({"signals", "get_outcome", "get_event", "read_history", "find_run", "get_hook",
                             "hooks_for_run", "branch_results", "get_branch", "read_tally"})


class WorkflowContext:
    """Replay state of one resume of one run."""

    def __init__(self, engine: Engine, run: RunRecord, history: RunHistory, *, recovering: bool = False,
                 resume_id: str | None = None) -> None:
        self.engine, self.run, self.history, self.recovering = engine, run, history, recovering
        self.store = cast("Store", GuardedStore(engine.store, self.infrastructure, self._before_store_call))
        #: The outcome of an op this resume ran under its claim, not written yet: the run's end carries it
        #: (``Store.finish_run``'s ``last``), else it is written alone before anything else (``flush``).
        self.pending: EventRecord | None = None
        #: ``pending`` is a sent step's outcome its message's worker holds (``hold_sent``), not an op
        #: run under a claim: a dispatch of the next op carries it (``core.replay.marks``), an end does not.
        self.pending_sent = False
        #: ``run`` is the record a fresh resume message carried, not confirmed yet (``confirm``, ``claim``).
        self.provisional = False
        self.fault: Exception | None = None  # a store failure: the resume raises it
        self.lease = LeaseSchedule(engine.settings.lease_seconds, run.lease_expires_at, engine.now())
        self.pos = 0
        self.fatal: BaseException | None = None
        self.op: tuple[int, str, str | None] = (-1, "", None)  # the op being run: position, kind, name
        self.halted: BaseException | None = None  # the first signal that stopped the function
        self.halted_at: tuple[int, str, str | None] = (-1, "", None)
        self.consumed_signals: set[str] = set()
        self.children: list[ChildLink] = []  # the children this replay met, and how they are linked
        self.has_hooks = False
        self.patches: dict[str, bool] = {}  # patched(id) answers of this replay (see patching)
        self.resume_id = resume_id or uuid.uuid4().hex  # who claims the run to run inline steps (Store.claim_run)
        self.owns_run = False
        self.streamed = (0, 0)  # the progress stream's entries and bytes, as this replay passed them (core.ops.events)
        self.updates = UpdateState()  # update handlers declared and updates answered (core.replay.updates)

    # -- bookkeeping --------------------------------------------------------------------
    def activate(self) -> contextvars.Token[WorkflowContext | None]:
        """Make this the current workflow of the thread."""
        return _current.set(self)

    @staticmethod
    def deactivate(token: contextvars.Token[WorkflowContext | None]) -> None:
        """Restore the previous current workflow."""
        _current.reset(token)

    def now(self) -> float:
        """The engine's clock."""
        return self.engine.now()

    def halt(self, signal: Signal) -> Signal:
        """Return ``signal`` to raise, remembering the first one and its op.

        Every control-flow signal a durable call raises goes through here, so the
        engine can tell when workflow code swallowed it (see ``SuspensionSwallowed``).
        """
        if self.halted is None:
            self.halted, self.halted_at = signal, self.op
        return signal

    def halted_op(self) -> tuple[int, str]:
        """The position and description of the op the first control-flow signal stopped."""
        return self.halted_at[0], _described(self.halted_at)

    def current_op(self) -> tuple[int, str]:
        """The position and description of the op the replay reached last."""
        return self.op[0], _described(self.op)

    @contextlib.contextmanager
    def infrastructure(self) -> Iterator[None]:
        """Run store (or transport) calls of the replay: a failure is remembered for the
        engine to raise and stops the function with ReplayAborted, which it cannot
        mistake for its own error."""
        try:
            yield
        except Exception as exc:
            if self.fault is None:
                self.fault = exc
            raise self.halt(ReplayAborted(describe(exc))) from exc

    def keep_lease(self) -> None:
        """Renew the run's lease when due; stop if the run ended or another resume moved it on."""
        now = self.now()
        if self.owns_run and self.run.deadline is not None and now >= self.run.deadline:
            raise self.halt(StaleHistory(self.pos))  # the resume re-reads the run and times it out
        if now < self.lease.due:
            return
        # An update, or a sent step's record that marked the next op in flight (``core.replay.marks``), moved the
        # in-memory cursor past the stored one as this resume read it; the stored cursor may have followed
        # since (that op's send moves it), so any cursor up to the in-memory one is no other resume's move.
        stored = self.updates.stored_cursor
        if not apply(self.store, RenewLease(self.run.run_id, self.run.cursor, stored)):
            run = self.store.find_run(self.run.run_id)
            if run is not None and run.cancel_requested and not run.is_terminal:
                raise self.halt(StaleHistory(self.pos))  # the resume re-reads the run and cancels it
            raise self.halt(ReplayStopped(f"run {self.run.run_id} ended or another resume moved it on"))
        self.run = dataclasses.replace(self.run, lease_expires_at=self.lease.renewed(now))

    def claim(self, pos: int, waiting: dict[str, Any]) -> None:
        """Become the one executor of this run's inline steps and steps run in place (one write per resume;
        for a run a fresh message carried, its condition confirms the run is stored as created).

        A concurrent resume of the run (two wakes, a duplicate message) must not run the
        same inline step; dispatched steps have ``advance_run`` for that.
        """
        carried = self.run if self.provisional else None
        for _ in range(MAX_SLOW_CLAIMS):
            sent = self.now()  # the lease written runs from about when the request was built, not answered
            if not apply(self.store, ClaimRun(self.run.run_id, pos, self.resume_id, waiting, carried)):
                raise self.halt(StaleHistory(pos))  # another resume holds the run: re-read, replay, or leave it
            carried, self.provisional = None, False
            if self.now() < sent + self.lease.lease_seconds / 3:
                break
            # The claim was answered late (a slow or retried request): its lease may be expiring, and a
            # resume that claims after it would run the same step. Claim again, as this resume's owner.
        else:
            raise self.halt(StaleHistory(pos))
        self.run = dataclasses.replace(self.run, status="running", cursor=pos, waiting=waiting,
                                       lease_expires_at=self.lease.renewed(sent))
        self.updates.stored_cursor = None  # the claim wrote the cursor
        self.owns_run = True

    # -- the run a fresh message carried; an outcome held for the end -------------------------
    def _before_store_call(self, name: str) -> None:
        """Before a store call of the replay: confirm a carried run (a claim confirms it by its
        condition), and write a held outcome (only the end carries one, and it is no replay call); a
        sent step's stays held over a read (what decides after the read writes, and writes it first)."""
        if name != "claim_run":
            self.confirm()
        if not (self.pending_sent and name in SENT_HOLD_READS):
            self.flush()

    def before_write(self) -> None:
        """Before a write the replay makes outside its guarded store (a child's creation): confirm a
        carried run and write a held outcome, as before any store call."""
        with self.infrastructure():
            self._before_store_call("")

    def confirm(self) -> None:
        """Make sure the run a fresh message carried is the stored one, as created (one read), before
        anything durable happens that no condition of its own confirms; else re-read and replay."""
        if not self.provisional:
            return
        self.provisional = False
        stored = self.store.find_run(self.run.run_id)
        if not still_created(stored, self.run):
            raise self.halt(StaleHistory(self.pos))
        self.run = cast("RunRecord", stored)

    @contextlib.contextmanager
    def blob_write(self) -> Iterator[None]:
        """Guard a payload object's write (the run a fresh message carried is confirmed first)."""
        with self.infrastructure():
            self.confirm()
            yield

    def hold(self, event: EventRecord) -> EventRecord:
        """Keep the outcome of an op this resume ran under its claim, to be written by the run's end if
        the function ends next (one request), else alone first (``flush``)."""
        self.flush()
        self.pending = event
        self.history.add(event)
        return event

    def hold_sent(self, event: EventRecord) -> None:
        """Hold the outcome of the sent step whose message this resume's worker ran, unwritten, for
        the replay to go on from (``core.replay.marks``); any store call writes it first (``flush``)."""
        self.pending, self.pending_sent = event, True
        self.history.add(event)

    def flush(self) -> None:
        """Write a held outcome by itself (before a step body runs, or any other store call).

        Raises:
            ReplayStopped: another resume recorded the op, or the run ended.
        """
        event, self.pending, self.pending_sent = self.pending, None, False
        if event is not None and not write_outcome(self.engine, RecordOutcome(event), self.store):
            self.engine.cache.forget(self.run.run_id)
            raise self.stopped(f"op {event.pos} was recorded by another resume, or the run ended")

    def take_pending(self) -> EventRecord | None:
        """The held outcome, for the end (or a dispatch) to carry (no longer held)."""
        event, self.pending, self.pending_sent = self.pending, None, False
        return event

    def stopped(self, what: str) -> ReplayStopped:
        """The signal to raise when a write shows another resume runs this run."""
        return self.halt(ReplayStopped(f"run {self.run.run_id}: {what}"))

    def next_op(self, kind: OpKind, name: str | None) -> tuple[int, EventRecord | None]:
        """Take the next op position; check it against the history (invariant 1)."""
        if self.halted is not None:
            raise Suspend()  # the code swallowed a suspension and went on: stop it here
        before_op(self)  # updates recorded before this op replayed, or the waiting ones handled here
        self.keep_lease()
        pos = self.pos
        self.pos += 1
        self.op = (pos, kind.value, name)  # described only if needed (``halted_op``): this is the replay's hot path
        event = self.history.outcomes.get(pos)
        if event is None and pos < self.run.cursor:
            # Every op before the cursor has an outcome: this history is stale.
            raise self.halt(StaleHistory(pos))
        recorded: tuple[Any, Any] | None = None
        if event is not None:
            recorded = (event.kind, event.name)
        elif self.run.cursor == pos and self.run.waiting:
            recorded = (self.run.waiting.get("kind"), self.run.waiting.get("name"))
        if recorded is not None and recorded != (kind.value, name):
            self.fatal = NonDeterminismError(pos, f"{recorded[0]} {recorded[1] or ''}".strip(),
                                             f"{kind} {name or ''}".strip(), recorded_by=self.run.code_version,
                                             replayed_by=self.engine.code_version(self.run.workflow))
            raise self.halt(Suspend())
        return pos, event

    def record(self, pos: int, kind: OpKind, status: str, *, name: str | None = None, data: str | None = None,
               error: str | None = None) -> EventRecord:
        """Record op ``pos``'s outcome once; if another resume won, return its record.

        The outcome of a wait, a child start, a fan-out or a marker is checked against the run's
        end, so a resume racing with a cancel writes nothing after it (a step's is not: see
        :meth:`recorded`).
        """
        event = EventRecord(run_id=self.run.run_id, seq=event_seq(pos), kind=kind.value, status=status, at=self.now(),
                            name=name, data=data, error=error)
        return self.recorded(RecordOutcome(event, while_live=True))

    def recorded(self, command: RecordOutcome, *, exclusive: bool = False) -> EventRecord:
        """Commit an op's outcome this replay decided (``commit.write_outcome``) and return it, or
        the record of another resume that won.

        ``exclusive``: only a resume running the op itself records it (a step run inline or in
        place), so losing the write means another resume runs this run (or it ended): stop.
        """
        event = command.event
        if exclusive and self.owns_run and command.branch is None and not command.while_live:
            return self.hold(event)  # written with the run's end, if it comes next, else alone (``flush``)
        if not write_outcome(self.engine, command, self.store):
            if exclusive:
                raise self.stopped(f"op {event.pos} was recorded by another resume, or the run ended")
            existing = self.store.get_outcome(self.run.run_id, event.pos)
            if existing is None:
                raise self.stopped("the run has ended")
            if existing.kind != event.kind:  # an update took the position first (core.replay.updates): re-read
                raise self.halt(StaleHistory(event.pos))
            event = existing
            self.engine.cache.remember(event)
        self.history.add(event)
        return event

    def in_flight(self, pos: int) -> bool:
        """Whether op ``pos`` was dispatched by an earlier resume and is not to be re-sent."""
        return self.run.cursor >= pos and not (self.recovering and self.run.cursor == pos)

    def waiting_due(self, pos: int, kind: OpKind) -> float | None:
        """The due time stored when the run first suspended at ``pos`` (timers never move)."""
        waiting = self.run.waiting or {}
        if self.run.cursor == pos and waiting.get("kind") == kind.value and "due" in waiting:
            return float(waiting["due"])
        return None

    def encode(self, value: Any, what: str, owner: str | None = None) -> str:
        """Encode a payload under the configured size limit (a large one is written to the prefix
        of run ``owner``, this run by default, and its reference returned; a failed write is the
        store's, not the workflow's)."""
        return self.engine.payloads.encode(value, what, owner or self.run.run_id, self.blob_write)

    def adopt(self, text: str | None) -> str | None:
        """Stored payload text of another run made this run's (``Payloads.adopt``), before it is recorded."""
        return self.engine.payloads.adopt(text, self.run.run_id, self.infrastructure)

    def decode(self, text: str | None) -> Any:
        """The value of a recorded payload (inline, or the object a reference names)."""
        if reference_of(text) is not None:  # a payload held inline (the usual case) is decoded at once
            with self.infrastructure():
                text = self.engine.payloads.resolve(text)
        return codec.loads(text)

    def timer(self, pos: int, kind: TimerKind, due: float, data: Any = None) -> TimerRecord:
        """Return the timer of op ``pos`` (its id is derived, so re-suspending overwrites it)."""
        run_id = self.run.run_id
        return TimerRecord(timer_id=op_timer_id(run_id, pos, kind.value), kind=kind.value, run_id=run_id,
                           due_at=due, pos=pos, data=None if data is None else codec.dumps(data))

    def advanced(self, pos: int, waiting: dict[str, Any]) -> None:
        """Note that this resume marked op ``pos`` in flight (``Store.advance_run``): the
        write renewed the lease and released any claim of the run."""
        self.run = dataclasses.replace(self.run, status="running", cursor=pos, waiting=waiting,
                                       lease_expires_at=self.lease.renewed(self.now()))
        self.updates.stored_cursor = None  # the write stored the cursor
        self.owns_run = False

    @contextlib.contextmanager
    def outside(self) -> Iterator[None]:
        """Run code as if in no workflow (a step body run in place)."""
        token = _current.set(None)
        try:
            yield
        finally:
            _current.reset(token)



def step_value(ctx: WorkflowContext, event: EventRecord) -> Any:
    """Return a recorded step result, or raise its recorded failure: the declared exception it
    names, rebuilt from JSON, else StepFailed carrying its chain (``core.model.failures``)."""
    if event.status == EventStatus.COMPLETED:
        return ctx.decode(event.data)
    raise step_failure(event.name or "?", event.error, event.data)


def _described(op: tuple[int, str, str | None]) -> str:
    """An op as errors show it: its kind, and its name if it has one (``step 'charge'``)."""
    _, kind, name = op
    return f"{kind} {name!r}" if name else kind
