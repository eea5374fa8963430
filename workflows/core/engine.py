"""The replay engine: resume a run from its history until it suspends or ends.

It works over its ports only (``Store``, ``Transport``, ``Clock``); the composition
root (``workflows.runtime``) builds it with the DynamoDB store and the Celery
transport, tests and the simulator with the in-memory ones.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any, Callable

from ..errors import NonDeterminismError, PayloadUnavailable, UnknownWorkflow, describe
from ..settings import Settings
from .admission.debounce import DEBOUNCE_TAG
from .admission.deferral import refusal
from .admission.delayed import start_timer_id
from .admission.gates import pass_gates
from .admission.versions import code_version
from .admission.workflow_slots import enqueue_new, release
from .model.control import ContinueAsNew, OutcomeRecorded, ReplayAborted, ReplayStopped, StaleHistory, Suspend
from .model.records import (
    EventRecord,
    OpKind,
    ResumeMessage,
    RunEnding,
    RunRecord,
    RunStatus,
    child_end_seq,
)
from .model.registry import WorkflowDef, find_workflow, get_workflow
from .ops.async_workflow import call_workflow
from .replay.children import close_children, close_timer, close_timer_id, links_of, to_close
from .replay.commands import Command, Defer, Fail, Halt, InFlight, Raise, RecordOutcome, Reload, RunEnd, decide
from .replay.commit import commit, write_outcome
from .replay.context import WorkflowContext
from .replay.creation import as_created, record_timers, still_created
from .replay.history_cache import HistoryCache
from .replay.in_place import InPlace
from .replay.marks import frontier
from .replay.observer import NullObserver, Observer
from .storage.chains import follow
from .storage.payloads import Payloads
from .storage.ports import Clock, Store, SystemClock, Transport
from .storage.recovery import take_recovery
from .storage.retention import KeepAlivePass, needs_sweep, sends_to_bucket
from .storage.rules import inline_result_limit, new_request

log = logging.getLogger("workflows.engine")

MAX_CONTENDED_REPLAYS = 8
#: Statuses of a run that nothing runs: a wake must send it a resume.
PARKED = (RunStatus.SUSPENDED, RunStatus.DELAYED)

RunEndListener = Callable[[RunRecord], None]


class Engine:
    """Resumes runs; one per process and settings."""

    def __init__(self, store: Store, transport: Transport, settings: Settings, clock: Clock | None = None,
                 observer: Observer | None = None) -> None:
        self.store, self.transport, self.settings = store, transport, settings
        self.clock: Clock = clock or SystemClock()
        self.observer: Observer = observer or NullObserver()
        self.cache = HistoryCache(store)
        self.run_end_listeners: list[RunEndListener] = []
        self.in_place = InPlace()
        self.payloads = Payloads(getattr(store, "blobs", None), settings)  # large payloads: core/storage/payloads.py
        self.keep_alive = KeepAlivePass()  # where beat's keep-alive pass is (core/storage/retention.py)

    def now(self) -> float:
        """The engine's clock, in epoch seconds."""
        return self.clock.now()

    # -- creating runs ------------------------------------------------------------------
    def new_run_record(self, run_id: str, workflow: str, args: str, **fields: Any) -> RunRecord:
        """A run record ready for :meth:`Store.create_run`, stamped with this code's version."""
        fields.setdefault("code_version", self.code_version(workflow))
        fields.setdefault("req", new_request())  # its creation's request id: see ``unread``
        return RunRecord(run_id=run_id, workflow=workflow, status=RunStatus.PENDING.value, created_at=self.now(),
                         args=args, **fields)

    def code_version(self, workflow: str) -> str | None:
        """The code version this process stamps on and replays runs of ``workflow`` with."""
        return code_version(self.settings, workflow)

    def create_run(self, definition: WorkflowDef, args: str, *, run_id: str | None = None,
                   idempotency_key: str | None = None, **fields: Any) -> tuple[str, bool]:
        """Store a new run and queue its first resume; return ``(run_id, created)``.

        The run is stored leased, so a resume lost in the send is recovered. A ``start_at`` in
        ``fields`` (epoch seconds) stores it ``delayed`` instead, with the timer that starts it
        (``core.admission.delayed``); its ``max_duration`` counts from then.
        """
        begins = max(self.now(), fields.get("start_at") or 0.0)
        deadline = begins + definition.max_duration if definition.max_duration else None
        fields.setdefault("priority", definition.priority)
        record = self.new_run_record(run_id or str(uuid.uuid4()), definition.name, args, deadline=deadline,
                                     idempotency_key=idempotency_key, **fields)
        if record.start_at is None:  # a delayed run joins its workflow's limit when it starts (gates)
            enqueue_new(self, definition, record)  # a limited workflow's run waits its turn in creation order
        run_id, created = self.store.create_run(record, timers=record_timers(record))
        if created and record.start_at is None:  # a fork has copied history: its first resume must read it
            self.send_leased_resume(run_id, fresh=None if record.forked_from else record, priority=record.priority)
        return run_id, created

    # -- resuming -----------------------------------------------------------------------
    def receive_resume(self, message: ResumeMessage, *, first_delivery: bool) -> None:
        """Body of a resume message; ``first_delivery``: the broker delivers it for the first time.

        The run a fresh message carries is used unread only while a write's condition shows
        the stored run is still the one it describes (see ``unread``), else the run is read (a
        run that is not stored is dead-lettered).
        """
        fresh = message.fresh if not message.recovering and first_delivery else None
        self.resume(message.run_id, recovering=message.recovering, fresh=fresh)

    def resume(self, run_id: str, *, run: RunRecord | None = None, recovering: bool = False,
               known_through: int | None = None, fresh: RunRecord | None = None,
               held: EventRecord | None = None) -> None:
        """Replay a run until it suspends, dispatches, or ends.

        Args:
            run: a recent read of the run, to save a read (conditions catch staleness).
            recovering: the reconciler found the run's lease expired: re-send an
                op that is marked in flight.
            known_through: this process just recorded the outcome at this position.
            fresh: the run the first delivery of its first resume carries: while the stored
                run is as created, it has no history to read, and it is used unread: the first
                write's condition (a claim), or one read before any other write, confirms it.
            held: the outcome of the sent step whose message this worker ran, not written yet: the
                replay goes on from it, and it is written with what the replay decides (``core.replay.marks``).
        """
        with self.observer.resume(run_id, recovering):
            box = [held] if held is not None else []  # emptied when a replay or a write takes it
            try:
                self._resume(run_id, run, recovering, known_through, fresh, box)
            except Exception:
                if box:  # the resume failed before anything took the outcome: keep it, the step is not run again
                    with contextlib.suppress(Exception):
                        write_outcome(self, RecordOutcome(box.pop()))
                raise

    def _resume(self, run_id: str, run: RunRecord | None, recovering: bool, known_through: int | None,
                fresh: RunRecord | None, held: list[EventRecord]) -> None:
        """``held``: the sent step's outcome (see ``resume``), taken (emptied) by the first replay or write."""
        resume_id = uuid.uuid4().hex  # who claims the run to run inline steps (Store.claim_run)
        provisional = fresh is not None and run is None and unread(fresh, run_id)
        if provisional:
            run = fresh
        maybe_new = fresh is not None
        for _ in range(MAX_CONTENDED_REPLAYS):
            run = run or self.store.find_run(run_id)
            if run is not None and run.recovery_pending:  # a worker is here: the next expiry is a fault
                take_recovery(self, run)
            if maybe_new and as_created(run):
                known_through = -1
            maybe_new = provisional  # the run read after the carried one failed to confirm may be as created still
            if held and (run is None or run.is_terminal or run.cancel_requested
                         or (run.deadline is not None and self.now() >= run.deadline)):
                event = held.pop()  # written alone, as before a replay (the end takes the next position)
                if not write_outcome(self, RecordOutcome(event)):
                    return  # another worker recorded it: it goes on
                known_through = event.pos
            if run is None:
                self.transport.dead_letter("resume message for an unknown run", {"run_id": run_id})
                return
            if run.is_terminal:
                return
            if run.cancel_requested:
                self.cancel_now(run, owner=resume_id)
                return
            if run.deadline is not None and self.now() >= run.deadline:
                self.time_out(run, owner=resume_id)
                return
            self.observer.replaying(run)
            if self._replay(run, known_through, recovering, resume_id, provisional, held):
                return
            run, known_through, provisional = None, None, False
        log.warning("run %s: resume gave up after %d contended replays; its lease will recover it",
                    run_id, MAX_CONTENDED_REPLAYS)

    def _replay(self, run: RunRecord, known_through: int | None, recovering: bool, resume_id: str,
                provisional: bool = False, held: list[EventRecord] | None = None) -> bool:
        """Replay the workflow function once and commit what it decided; False if a conditional
        write lost (replay again). ``provisional``: ``run`` is the run a fresh message carried, which
        a command that writes confirms first (one read), unless a claim's condition did. ``held``: a
        sent step's outcome, which the replay takes (see ``resume``)."""
        command, ctx = self._decide(run, known_through, recovering, resume_id, provisional, held or [])
        if held:  # decided without a replay (deferred, a gate): the outcome is written alone first
            if not write_outcome(self, RecordOutcome(held.pop())):
                return True  # another worker recorded it: it goes on
        if (ctx.provisional if ctx is not None else provisional) and not isinstance(
                command, (Halt, InFlight, Reload, Raise)) and not still_created(self.store.find_run(run.run_id), run):
            return False  # not the stored run as created: read it and replay
        return commit(self, run, command, ctx)

    def _decide(self, run: RunRecord, known_through: int | None, recovering: bool,
                resume_id: str, provisional: bool = False,
                held: list[EventRecord] | None = None) -> tuple[Command, WorkflowContext | None]:
        """What this resume of ``run`` does: one command, and the replay that decided it (None:
        decided before one). The history is read once the run is this worker's to run (a deferred
        or parked run reads none). A sent step's ``held`` outcome is taken by the replay."""
        try:
            definition: WorkflowDef | None = get_workflow(run.workflow)
        except UnknownWorkflow:
            definition = None
        if definition is None:  # not this worker's to decide (see deferral)
            return Defer(refusal(self, run, known=False) or ""), None
        if admission_due(run, definition, self.settings):  # else a run with no gate asks admission nothing
            if (refused := refusal(self, run, known=True)) is not None:
                return Defer(refused), None
            if (passed := pass_gates(self, definition, run)) is not True:  # start time, debounce, workflow limit
                return (Halt() if passed is False else Reload()), None
        if held:
            known_through = held[0].pos - 1  # every outcome before it cached: nothing to read
        history = self.cache.load(run.run_id, known_through=known_through)
        seen = frontier(run, history)  # an op a sent step's record marked in flight (core.replay.marks)
        ctx = WorkflowContext(self, seen, history, recovering=recovering, resume_id=resume_id)
        if seen.cursor != run.cursor:
            ctx.updates.stored_cursor = run.cursor  # what a lease renewal's condition names
        ctx.provisional = provisional
        if held:
            event = held.pop()
            if event.pos in history.outcomes:  # another worker recorded it (and goes on)
                return Halt(), None
            ctx.hold_sent(event)
        try:
            args, kwargs = self.payloads.decode(run.args)
        except PayloadUnavailable as exc:  # gone for good: no retry brings it back
            return Fail(describe(exc), log=True), ctx
        token = ctx.activate()
        value: Any = None
        raised: BaseException | None = None
        try:
            value = call_workflow(ctx, definition.fn, args, kwargs)  # an async def one is driven
        except (Suspend, ReplayAborted, ReplayStopped, StaleHistory, ContinueAsNew, Exception) as exc:
            raised = exc
        finally:
            ctx.deactivate(token)
        return decide(ctx, value, raised), ctx

    # -- endings ------------------------------------------------------------------------
    def end(self, run: RunRecord, ending: RunEnd, *, ctx: WorkflowContext | None = None) -> bool:
        """End a run as ``ending`` says (one caller wins) and tidy up after it. The resume ending
        it is ``ctx``'s, if given, else ``ending.owner``; a run another resume holds with a live
        claim is not ended.

        An end without a replay (a cancel, a timeout, recovery given up) may come while an
        op runs: it takes that op's outcome (the first position without one), so the op
        records nothing after the end.
        """
        status = ending.status
        parent = run.parent_run_id if status != RunStatus.CONTINUED else None
        owner = ctx.resume_id if ctx is not None else ending.owner
        notice = self._child_end(run, status, ending.result, ending.error) if parent is not None else None
        last = self._last_outcome(run, ending, ctx)
        ended: RunRecord | None = None
        for _ in range(MAX_CONTENDED_REPLAYS):
            # Its children to close by their policies (a replay's, or from the history the fence was read
            # with): a timer in the end's write closes them if this process dies before it does (core.replay.children).
            if ctx is not None:
                fence, links, history = None, ctx.children, ctx.history
            else:
                history = self.cache.load(run.run_id)
                fence, links = history.complete_below, links_of(history)
            closing = to_close(links, status.value)
            timers = [close_timer(run.run_id, status.value, self.now())] if closing else []
            swept = needs_sweep(run, status.value, self.now(), self.settings, bucket=sends_to_bucket(self),
                                ops={e.kind for e in history.outcomes.values()})
            try:
                ended = self.store.finish_run(run.run_id, RunEnding(
                    status.value, ending.result, ending.error, ending.continued_to, wake=parent, wake_record=notice,
                    owner=owner, last=last, fence=fence, timers=timers, swept=swept))
                break
            except OutcomeRecorded:
                continue  # the op just recorded its outcome: read it, take the next position
        if ended is None:
            if last is not None:  # this resume lost the run: its outcome is recorded alone, while the run lives
                write_outcome(self, RecordOutcome(last, while_live=True))
                self.cache.forget(run.run_id)
            return False
        self.cache.forget(run.run_id)
        self.after_end(ended, run, ctx, closing)
        if notice is not None and notice.data != ending.result:
            self._settle_copied_result(notice)
        return True

    def _settle_copied_result(self, notice: EventRecord) -> None:
        """A child's large result was copied into its parent's prefix before the end. If the parent
        has ended, its end came first (the record was not written: nothing reads the copy) or right
        after (its history holds the record for the retention after that end); either way the
        parent's retention sweep may have listed its prefix already, so the copy is marked ended
        here, which keeps it at least as long as that sweep's mark would have."""
        try:
            parent = self.store.find_run(notice.run_id)
            if parent is None or parent.is_terminal:
                self.payloads.mark_ended(notice.data)
        except Exception:  # noqa: BLE001 - the run has ended: an unmarked copy is kept, never lost
            log.exception("run %s: the copy of a child's result for its ended parent was not marked ended "
                          "(it is kept until deleted: see docs/payloads.md, orphans)", notice.run_id)

    def _last_outcome(self, run: RunRecord, ending: RunEnd, ctx: WorkflowContext | None) -> EventRecord | None:
        """The outcome the resume ending the run holds (its last op's, run under its claim), for the end
        to carry; one that would not fit in the run item beside the end is recorded alone first."""
        last = None if ctx is None else ctx.take_pending()
        if last is None:
            return None
        size = sum(len(text.encode()) for text in (last.data, last.error, ending.result, ending.error) if text)
        if size + 1024 <= inline_result_limit(self.settings):
            return last
        write_outcome(self, RecordOutcome(last))  # as a step's record (lost: the end below loses too)
        return None

    def _child_end(self, run: RunRecord, status: RunStatus, result: str | None,
                   error: str | None) -> EventRecord | None:
        """The record of how a child (the last run of its chain) ended, for its parent's history, which
        its end writes with the parent's wake: the parent never reads the child's items (they expire
        retention after this end; the parent may wait longer)."""
        if run.parent_run_id is None or run.parent_pos is None:
            return None
        failed = None if status == RunStatus.COMPLETED else (error or status.value)[:4000]
        data = self.payloads.adopt(result, run.parent_run_id)  # its object copied into the parent's prefix first
        return EventRecord(run_id=run.parent_run_id, seq=child_end_seq(run.parent_pos), kind=OpKind.CHILD_END.value,
                           status=status.value, at=self.now(), name=run.workflow, data=data, error=failed)

    def after_end(self, ended: RunRecord, before: RunRecord, ctx: WorkflowContext | None,
                  closing: list[tuple[str, str]] | None = None) -> None:
        """Tidy up after a run's end: its timers, hooks, children to close (``closing``, whose
        ``parent_close`` timer the end wrote), parent, workflow slot."""
        timers = [f"{ended.run_id}#deadline"] if ended.deadline is not None else []
        if before.waiting and before.waiting.get("timer"):
            timers.append(before.waiting["timer"])
        if before.status == RunStatus.DELAYED:  # ended before its start time (cancelled)
            timers.append(start_timer_id(ended.run_id))
        if ctx is None or ctx.has_hooks:
            self.store.close_hooks(ended.run_id)
        if closing:
            close_children(self, closing)
            timers.append(close_timer_id(ended.run_id))
        for timer_id in timers:
            self.store.delete_timer(timer_id)
        if ended.parent_run_id and ended.status != RunStatus.CONTINUED:
            self.resume_if_suspended(ended.parent_run_id)  # the end woke it (one transaction)
        definition = find_workflow(ended.workflow)
        if definition is not None and definition.limits is not None:
            release(self, definition, ended)  # its workflow slot
        for listener in self.run_end_listeners:
            listener(ended)
        self.observer.run_ended(ended)

    def cancel_now(self, run: RunRecord, owner: str | None = None) -> None:
        """End a run whose cancellation was requested (unless another resume runs it: it will)."""
        self.end(run, RunEnd.cancelled(owner))

    def time_out(self, run: RunRecord, owner: str | None = None) -> None:
        """End a run that passed its ``max_duration`` (unless another resume runs it: it will)."""
        self.end(run, RunEnd.timed_out(owner))

    def request_cancel(self, run_id: str) -> RunRecord | None:
        """Ask a run to cancel (the current run of its chain, if it continued); a suspended run
        is resumed to act on it at once. None: the run (its chain) has ended or does not exist."""
        woken = self.store.wake_run(run_id, cancel=True)
        if woken is None:  # ended; if it continued, its chain goes on in a later run
            run = self.store.find_run(run_id)
            current = None if run is None else follow(self.store, run)
            if current is None or current.run_id == run_id or current.is_terminal:
                return None
            return self.request_cancel(current.run_id)
        fanning_out = (woken.waiting or {}).get("kind") == OpKind.PARALLEL.value
        if woken.status in (RunStatus.SUSPENDED, RunStatus.PENDING, RunStatus.DELAYED) or fanning_out:
            # a fan-out's branches read no run item: a resume acts on the cancel now, not at the join
            self.send_leased_resume(run_id, priority=woken.priority)
        return woken

    def wake(self, run_id: str) -> None:
        """Tell a run something arrived (its start time too); resume it if it is suspended or delayed."""
        woken = self.store.wake_run(run_id)
        if woken is not None and woken.status in PARKED:
            self.send_leased_resume(run_id, priority=woken.priority)

    def resume_if_suspended(self, run_id: str) -> None:
        """Queue a resume of a run just woken (by a write that leased it) if it is suspended (or
        delayed: a signal to a delayed run makes it park again at once, see ``core.admission.delayed``).

        Best effort: the wake's lease already guarantees the run resumes."""
        run = self.store.find_run(run_id)
        if run is not None and run.status in PARKED:
            self.send_leased_resume(run_id, priority=run.priority)

    def send_leased_resume(self, run_id: str, fresh: RunRecord | None = None, priority: str | None = None) -> None:
        """Queue a resume of a run that holds a lease, at the run's ``priority``.

        The lease already guarantees the run is resumed (by the reconciler, when it
        expires), so a send that fails after the broker's retries only delays the
        run: it is logged, not raised to a caller whose write is already stored.
        """
        try:
            self.transport.send_resume(ResumeMessage(run_id, fresh=fresh, priority=priority))
        except Exception:  # noqa: BLE001 - any broker failure; the lease recovers the run
            log.warning("could not queue a resume of run %s; it resumes when its lease expires",
                        run_id, exc_info=True)


def admission_due(run: RunRecord, definition: WorkflowDef, settings: Settings) -> bool:
    """Whether a resume of ``run`` asks admission anything, from what the run carries (one check):
    this worker serves some code versions only, or the run has not begun and carries a gate (a
    start time, a debounce window, a workflow limit). Otherwise every gate would let it through."""
    if settings.serve_versions:
        return True
    return run.cursor == -1 and (run.start_at is not None or definition.limits is not None
                                 or DEBOUNCE_TAG in (run.tags or {}))


def unread(fresh: RunRecord, run_id: str) -> bool:
    """Whether a fresh resume may use the run its message carries without reading it: the
    message names its creation's request id (a condition checks that the stored run still
    carries it, as created, before anything durable happens: ``WorkflowContext.confirm``), and
    no gate before its first op (a debounce window, a workflow limit) reads the store with it."""
    if fresh.req is None or fresh.run_id != run_id or not as_created(fresh) or DEBOUNCE_TAG in (fresh.tags or {}):
        return False
    try:
        definition = get_workflow(fresh.workflow)
    except UnknownWorkflow:
        return False
    return definition.limits is None


__all__ = ["Engine", "NonDeterminismError", "record_timers"]
