"""Fork a run at op position N, and rerun a failed run from its failed step.

A fork is a new run of the same workflow with the same arguments whose history starts
with copies of the original's recorded outcomes at positions below N; its ops from N on
run again (with the code this worker has now). It is linked to the original
(``forked_from``, ``forked_at``) and started like any run: leased and sent.

What is copied: the outcomes of steps (results and failures), sleeps, received signals,
``patched`` markers, updates with their answers (a caller retrying an update id the fork replays
gets the same answer), and child starts and results whose child run has ended. What is not:
failed-attempt records (op N starts at attempt 1), hooks (a hook's token is derived from
its run's id, and its record belongs to the original), fan-outs (their branch results live
in the original's join), signals not yet received, and live children (their end wakes the
original, not the fork): a fork whose copied positions hold a hook, a fan-out or a live
child is refused with :class:`ForkRefused` naming the position.

A fork depends on nothing of the original once it is created: the copied records and the
arguments that reference large payloads have their objects copied into the fork's own prefix
first (``Payloads.adopt``), so the original's items and objects may expire under it.

Creating a fork writes the objects, then the copies (``Store.copy_history``, batched and
unconditional: no run owns that history yet), then the run (``create_run``, conditional, with
the idempotency key's guard in the same transaction). A run is never visible without its
whole copied history; a crash in between leaves records no run points to (they carry no TTL:
see docs/versioning.md). Every fork gets a fresh id: the key's guard alone decides
idempotency. An id derived from the key would make a fork retried after the guard expired
(TTL deletes late and in any order) land on the older fork's surviving history items and
replay its outcomes.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import TYPE_CHECKING

from ...errors import ForkRefused
from ..model.embed import unembed
from ..model.records import EventRecord, OpKind, RunRecord, RunStatus, event_seq, with_last_outcome
from ..model.registry import get_workflow
from ..model.states import EventStatus
from ..ops.events import published
from ..replay.updates import find_answer
from ..storage.chains import follow

if TYPE_CHECKING:
    from ..engine import Engine
    from ..storage.ports import Store

#: Ops whose recorded outcome cannot be copied to another run, and why.
NOT_COPIED = {
    OpKind.HOOK.value: "a hook (its token is bound to the original run)",
    OpKind.HOOK_WAIT.value: "a hook wait (its hook is bound to the original run)",
    OpKind.PARALLEL.value: "a fan-out (its branch results belong to the original run's join)",
}
#: Outcomes a rerun starts from: a step or a fan-out that failed.
RERUN_KINDS = frozenset({OpKind.STEP.value, OpKind.PARALLEL.value})


def outcomes_below(store: Store, run_id: str, at: int) -> dict[int, EventRecord]:
    """The recorded outcomes of ops ``0..at-1`` (an ``end`` record is no outcome of an op)."""
    return _outcomes(_records_below(store, store.find_run(run_id), run_id, at))


def _records_below(store: Store, run: RunRecord | None, run_id: str, at: int) -> list[EventRecord]:
    """The history records below op ``at`` (with the outcome ``run``'s end carries, if it is below)."""
    if at <= 0:
        return []
    return [e for e in with_last_outcome(run, store.read_history(run_id, until_seq=event_seq(at) - 1))
            if e.seq < event_seq(at)]


def _outcomes(records: list[EventRecord]) -> dict[int, EventRecord]:
    return {e.pos: e for e in records if e.is_outcome and e.kind != OpKind.END.value}


def plan_fork(store: Store, source: RunRecord, at: int) -> list[EventRecord]:
    """The outcomes a fork of ``source`` at ``at`` copies, in position order.

    Raises:
        ForkRefused: ``at`` is not a position, lies past the first op without an outcome,
            or an outcome below it cannot be copied.
    """
    if isinstance(at, bool) or not isinstance(at, int) or at < 0:
        raise ForkRefused(source.run_id, None, f"the position must be an int of 0 or more, got {at!r}")
    records = _records_below(store, source, source.run_id, at)
    outcomes = _outcomes(records)
    child_ends = {e.pos: e for e in records if e.is_child_end}  # how a child ended: its result() reads it
    copies = []
    for pos in range(at):
        event = outcomes.get(pos)
        if event is None:
            raise ForkRefused(source.run_id, at, f"op {pos} has no recorded outcome; a fork starts at most at "
                                                 f"the first op without one ({pos})")
        why = NOT_COPIED.get(event.kind)
        if why is None and event.kind == OpKind.CHILD.value:
            why = None if pos in child_ends else _live_child(store, event)
        if why is not None:
            raise ForkRefused(source.run_id, at, f"op {pos} is {why}; fork at {pos} or before")
        if pos in child_ends:
            copies.append(child_ends[pos])
        copies.append(event)
        if event.kind == OpKind.UPDATE.value:
            copies.extend(_answer_of(store, source.run_id, event))
    return copies


def _answer_of(store: Store, run_id: str, update: EventRecord) -> list[EventRecord]:
    """The answer item of a recorded update (the fork replays the update, so it must answer it too)."""
    update_id = str(unembed(update.data or "{}", "payload")[0].get("id"))
    answer = find_answer(store, run_id, update_id)
    return [] if answer is None else [answer]


def _live_child(store: Store, event: EventRecord) -> str | None:
    child_id = json.loads(event.data or "{}").get("run_id")
    child = store.find_run(child_id) if child_id else None
    if child is not None:
        child = follow(store, child)
    if child is not None and child.is_terminal:
        return None
    return f"the start of child run {child_id}, which has not ended (its end would wake the original run)"


def rerun_position(store: Store, run: RunRecord) -> int:
    """Where a rerun of a failed run starts: its last failed step or fan-out, else the first
    op without an outcome (the run failed in workflow code, after its last op).

    Raises:
        ForkRefused: the run has not failed.
    """
    if run.status != RunStatus.FAILED:
        raise ForkRefused(run.run_id, None, f"only a failed run can be rerun (this one is {run.status}); "
                                            "fork it at a position instead")
    outcomes = {e.pos: e for e in with_last_outcome(run, store.read_history(run.run_id))
                if e.is_outcome and e.kind != OpKind.END.value}
    failed = [pos for pos, e in outcomes.items() if e.kind in RERUN_KINDS and e.status == EventStatus.FAILED]
    if failed:
        return max(failed)
    pos = 0
    while pos in outcomes:
        pos += 1
    return pos


def fork_run(engine: Engine, run_id: str, at: int, *, idempotency_key: str | None = None) -> str:
    """Create a fork of run ``run_id`` at op ``at`` and queue its first resume; return its id.

    While its guard exists, the same ``idempotency_key`` names the same fork (a retry finds it).

    Raises:
        RunNotFound: no run has this id.
        UnknownWorkflow: the run's workflow is not registered in this process.
        ForkRefused: see :func:`plan_fork`.
    """
    if idempotency_key is not None:
        existing = engine.store.run_for_key(idempotency_key)
        if existing is not None:
            return existing
    source = engine.store.get_run(run_id)
    copies = plan_fork(engine.store, source, at)
    definition = get_workflow(source.workflow)
    fork_id = str(uuid.uuid4())  # fresh, even with a key (see the module docstring)
    adopt = engine.payloads.adopt  # the source's objects copied into the fork's prefix, before the records
    engine.store.copy_history([dataclasses.replace(e, run_id=fork_id, data=adopt(e.data, fork_id), next_waiting=None)
                               for e in [*copies, *published(copies)]])  # the fork dispatches its next op itself
    fork_id, _ = engine.create_run(definition, adopt(source.args, fork_id) or "", run_id=fork_id,
                                   idempotency_key=idempotency_key, forked_from=source.run_id, forked_at=at,
                                   priority=source.priority)
    return fork_id


def rerun(engine: Engine, run_id: str, *, idempotency_key: str | None = None) -> str:
    """Fork a failed run at its failed step (:func:`rerun_position`); return the new run's id."""
    source = engine.store.get_run(run_id)
    return fork_run(engine, run_id, rerun_position(engine.store, source), idempotency_key=idempotency_key)
