"""Workflow-level concurrency: at most N live runs of a workflow (per key value), the others
waiting in start order (see docs/flow-control.md, "Workflow limits").

A run takes a slot of its limit at its first resume (before its first op) and holds it until it
ends: the slot's holder is the run id and it has no lease (a run may sleep for days). A run
refused a slot joins the limit's waiting list (an item per waiter, placed by the run's creation
time) and is parked: suspended with a ``wake`` timer, in one write, so it always has a due timer
(invariant 10). The end of a run releases its slot and wakes the oldest waiters. Everything a
crash can leave behind heals at the next admission: a slot whose holder's run has ended is
freed, a waiter whose run has ended or that holds a slot already is taken out of the list. The
wake timer is the backstop when the releasing process dies between the run's end and the wake;
it is left in place when the run is admitted (a twin resume may have parked the run with it).
A continue-as-new successor takes over its predecessor's slot. A run started by a client joins
the list before it is stored (``enqueue_new``), so runs are admitted in creation order.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...errors import StorageError
from ..model.limits import WorkflowLimits, key_value
from ..model.records import RunRecord, RunStatus, SlotRecord, TimerKind, TimerRecord
from ..model.registry import WorkflowDef
from .debounce import DEBOUNCE_TAG

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger("workflows.flow")

#: A workflow slot has no lease: it is held until its run ends (its expiry is this far ahead).
HELD_UNTIL_THE_END = 100 * 365 * 86400.0
#: Waiters whose runs are read at once (one BatchGet) when looking for live ones.
WAITERS_PER_READ = 100


def limit_of(engine: Engine, definition: WorkflowDef, run: RunRecord) -> str | None:
    """The name of the limit ``run`` counts against, or None for an unlimited workflow."""
    limits: WorkflowLimits | None = definition.limits
    if limits is None:
        return None
    name = f"workflow:{definition.name}"
    if limits.concurrency_key is None:
        return name
    args, kwargs = engine.payloads.decode(run.args)
    return f"{name}#{key_value(definition.fn, limits.concurrency_key, list(args), dict(kwargs))}"


def queue_of(limit: str) -> str:
    """The waiting list of a limit (a key value cannot make one limit's list another's limit)."""
    return f"queue:{limit}"


def queued_timer_id(run_id: str) -> str:
    """The backstop wake timer of a waiting run."""
    return f"{run_id}#queued"


def place_of(run: RunRecord) -> int:
    """A run's place in its waiting list: its creation time in microseconds."""
    return int(run.created_at * 1_000_000)


def enqueue_new(engine: Engine, definition: WorkflowDef, run: RunRecord) -> None:
    """Put a run about to be created in its limit's waiting list, so runs are admitted in the order
    they were created even when their first resumes race. A waiter whose run was never created
    (a crash before, an idempotency key that named an older run) is taken out at an admission.
    A debounced run joins at its first resume after its window, so its window holds up no one."""
    if (run.tags or {}).get(DEBOUNCE_TAG) is not None:
        return  # it joins after its debounce window, with the key its last arguments give
    if definition.limits is not None and (limit := limit_of(engine, definition, run)) is not None:
        engine.store.enqueue_waiter(queue_of(limit), place_of(run), run.run_id)


def admit(engine: Engine, definition: WorkflowDef, run: RunRecord) -> bool | None:
    """Admit ``run`` to its workflow's limit before its first op.

    Returns True when the run holds a slot (or is not limited), False when it was parked in
    the waiting list (this resume is done), None when the run changed meanwhile (read it again).
    """
    if definition.limits is None or run.cursor != -1:
        return True
    limit = limit_of(engine, definition, run)
    if limit is None:
        return True
    store, capacity, run_id = engine.store, definition.limits.concurrency, run.run_id
    holders = store.slot_holders(limit)
    if any(h.holder == run_id for h in holders):
        return True
    inherited = next((h for h in holders if run.continued_from and h.holder == run.continued_from), None)
    if inherited is not None and store.pass_slot(limit, inherited.number, inherited.holder or "", run_id):
        return True
    queue = queue_of(limit)
    waiters = store.slot_holders(queue)
    place = next((w.number for w in waiters if w.holder == run_id), None)
    if place is None:
        place = store.enqueue_waiter(queue, place_of(run), run_id)
    # Read after joining the list: a release that missed this waiter in the list freed its slot before.
    held = _live_holders(engine, limit, store.slot_holders(limit), capacity)
    free = capacity - len(held)
    earlier = [w for w in waiters if w.number < place]
    ahead = _live_waiters(engine, queue, earlier, held, enough=free) if free > 0 else []
    if free > 0 and len(ahead) < free:
        if store.acquire_slot(limit, capacity, run_id, engine.now() + HELD_UNTIL_THE_END) is not None or \
                any(h.holder == run_id for h in store.slot_holders(limit)):  # a twin resume took it for us
            # Its wake timer stays: a twin resume refused a moment ago may have just parked the run
            # with it, and it is all that resumes the run if this resume fails before its next write.
            # A wake of a run that is live is harmless (the timer is deleted when it fires).
            store.release_slot(queue, place, run_id)
            return True
    timer = TimerRecord(timer_id=queued_timer_id(run_id), kind=TimerKind.WAKE.value, run_id=run_id,
                        due_at=engine.now() + engine.settings.defer_seconds)
    if not store.defer_run(run_id, run.wake_seq, timer):
        return None
    log.info("run %s waits for a slot of %s (%d ahead of it)", run_id, limit, len(ahead))
    return False


def release(engine: Engine, definition: WorkflowDef, ended: RunRecord) -> None:
    """After ``ended`` of limited workflow ``definition`` ended: free its slot (a continued run's
    successor keeps it), take it out of the waiting list, and wake as many of the oldest waiters as
    slots are free. A store failure here is logged: what it left behind heals at the next admission."""
    if ended.status == RunStatus.CONTINUED:
        return
    try:
        _release(engine, definition, ended)
    except StorageError:
        log.warning("run %s ended; releasing its workflow slot failed (the next admission heals it)",
                    ended.run_id, exc_info=True)


def _release(engine: Engine, definition: WorkflowDef, ended: RunRecord) -> None:
    limit = limit_of(engine, definition, ended)
    if limit is None or definition.limits is None:
        return
    store, queue = engine.store, queue_of(limit)
    mine = (ended.run_id, ended.continued_from)
    for slot in store.slot_holders(limit):
        if slot.holder is not None and slot.holder in mine:
            store.release_slot(limit, slot.number, slot.holder)
    waiters = store.slot_holders(queue)
    for waiter in waiters:
        if waiter.holder == ended.run_id:
            store.release_slot(queue, waiter.number, ended.run_id)
    capacity = definition.limits.concurrency
    held = _live_holders(engine, limit, store.slot_holders(limit), capacity)
    free = capacity - len(held)
    if free <= 0:
        return
    others = [w for w in waiters if w.holder != ended.run_id]
    for run_id in _live_waiters(engine, queue, others, held, enough=free):
        engine.wake(run_id)


def _live_holders(engine: Engine, limit: str, holders: list[SlotRecord], capacity: int) -> set[str]:
    """The holders of the slots below ``capacity`` whose runs are live; frees the others' slots."""
    counted = {h.holder: h for h in holders if h.holder is not None and h.number < capacity}
    ended = _ended(engine, list(counted))
    for run_id in ended:
        engine.store.release_slot(limit, counted[run_id].number, run_id)
    return set(counted) - ended


def _live_waiters(engine: Engine, queue: str, waiters: list[SlotRecord], holders: set[str], *,
                  enough: int) -> list[str]:
    """The first ``enough`` run ids of ``waiters`` still waiting, in order (read a page of runs at a
    time); takes the others met on the way out of the list (their runs ended, or they hold a
    slot: admitted before their own clean-up)."""
    live: list[str] = []
    for first in range(0, len(waiters), WAITERS_PER_READ):
        page = [w for w in waiters[first:first + WAITERS_PER_READ] if w.holder is not None]
        gone = _ended(engine, [w.holder for w in page if w.holder]) | {w.holder for w in page} & holders
        for waiter in page:
            if waiter.holder in gone:
                engine.store.release_slot(queue, waiter.number, waiter.holder or "")
            elif len(live) < enough:
                live.append(waiter.holder or "")
        if len(live) >= enough:
            break
    return live


def _ended(engine: Engine, run_ids: list[str]) -> set[str]:
    """Which of ``run_ids`` have ended for good (a continued run lives on in its successor,
    unless that has ended too); one BatchGet (two for continued runs)."""
    if not run_ids:
        return set()
    runs = {r.run_id: r for r in engine.store.get_runs(run_ids)}
    successors = {r.continued_to: r.run_id for r in runs.values()
                  if r.status == RunStatus.CONTINUED and r.continued_to}
    ended_successors = {successors[r.run_id] for r in engine.store.get_runs(list(successors)) if r.is_terminal} \
        if successors else set()
    return {run_id for run_id in run_ids
            if (run := runs.get(run_id)) is None
            or (run.is_terminal and (run.status != RunStatus.CONTINUED or run_id in ended_successors))}
