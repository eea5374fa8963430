"""The writes of schedules: definitions, the sharded due index, fire claims and running-run bookkeeping.

Every change of a schedule's bookkeeping is one conditional update:

* A fire is claimed by an update conditioned on ``next_fire_at`` still being the value read (and
  on no other claim being open): it moves ``next_fire_at`` on, adds the fire time to ``running``
  and opens a claim (``pending``) whose lease is ``due_at``. The claim is closed by
  ``finish_fire`` once the run exists; a claim whose claimer died is due again when its lease passes.
* ``running`` and ``buffered`` are number sets of fire times, changed only with ``ADD``/``DELETE``
  (idempotent), and read only to choose which conditional update to try; each such update
  re-checks what it relied on.
"""

from __future__ import annotations

import json
from typing import Any

from ....errors import ScheduleAlreadyExists, ScheduleNotFound
from ...model.records import Advance, ScheduleRecord, chain_key
from ...model.states import ScheduleState
from ..plans import (
    A,
    Action,
    Add,
    Cond,
    Copy,
    Delete,
    DeleteFrom,
    Item,
    Put,
    Remove,
    RemoveIn,
    Set,
    SetIn,
    Update,
    plan,
)
from ..rules import SCHEDULE_SHARDS, check_item_size, shard_of
from .base import WritesBase
from .items import REVISION, to_json

#: The hash key of the listing index (every schedule).
LISTING = "schedule"


def schedule_record(item: Item) -> ScheduleRecord:
    """The schedule of a schedules item."""
    return ScheduleRecord(
        schedule_id=item["schedule_id"], workflow=item["workflow"], spec=json.loads(item["spec"]),
        overlap=item["overlap"], args=item["args"], state=item["state"], catchup_window=item.get("catchup_window"),
        created_at=item["created_at"], updated_at=item["updated_at"], next_fire_at=item.get("next_fire_at"),
        next_due_at=item.get("next_due_at"), due_at=item.get("due_at"), pending=item.get("pending"),
        running=sorted(item.get("running") or ()), buffered=sorted(item.get("buffered") or ()),
        heads=dict(item.get("heads") or {}), last_fire_at=item.get("last_fire_at"),
        last_run_id=item.get("last_run_id"), fired=int(item.get("fired") or 0),
        skipped=int(item.get("skipped") or 0), last_error=item.get("last_error"),
        declared=bool(item.get("declared")), revision=int(item.get(REVISION) or 0),
    )


def _pending(seen: bool) -> Cond:
    return A("pending").exists() if seen else A("pending").missing()


class ScheduleWrites(WritesBase):
    """The conditional writes of schedule items (see the ScheduleStore port)."""

    def _apply(self, name: str, schedule_id: str, actions: list[Action], cond: Cond) -> ScheduleRecord | None:
        """One conditional update; the schedule after it, or None if the condition failed."""
        done = self.commit(plan(name, Update("schedules", (schedule_id,), tuple(actions), cond)))
        return schedule_record(done.item) if done.applied and done.item is not None else None

    # -- definitions ----------------------------------------------------------------------------------
    def create_schedule(self, record: ScheduleRecord) -> ScheduleRecord:
        """Store a new schedule (active ones with a next fire enter the due index). Raises ScheduleAlreadyExists."""
        check_item_size({"args": record.args})
        now = self.now()
        active = record.state == ScheduleState.ACTIVE and record.next_due_at is not None
        item: Item = {"schedule_id": record.schedule_id, "kind": LISTING, "workflow": record.workflow,
                      "spec": to_json(record.spec), "state": record.state, "overlap": record.overlap,
                      "catchup_window": record.catchup_window, "args": record.args, "heads": {},
                      "next_fire_at": record.next_fire_at, "next_due_at": record.next_due_at,
                      "due_at": record.next_due_at, "fired": 0, "skipped": 0, "created_at": now, "updated_at": now,
                      "active_shard": shard_of(record.schedule_id, SCHEDULE_SHARDS) if active else None,
                      "declared": record.declared, REVISION: 1}
        if not self.commit(plan("create schedule", Put("schedules", item, A("schedule_id").missing()))):
            raise ScheduleAlreadyExists(record.schedule_id)
        return schedule_record({k: v for k, v in item.items() if v is not None})

    def update_schedule(self, schedule_id: str, seen_revision: int, changes: dict[str, Any], *,
                        reschedule: tuple[float | None, float | None] | None, active: bool,
                        seen_pending: bool) -> bool:
        """Change a definition if still at revision ``seen_revision`` (optimistic); ``reschedule``: the new
        ``(next_fire, next_due)``; ``seen_pending``: a claim was open (its lease is cut short)."""
        now = self.now()
        if "args" in changes:
            check_item_size({"args": changes["args"]})
        actions: list[Action] = [Add(REVISION, 1), Set("updated_at", now)]
        actions += [Set(name, to_json(value) if name == "spec" else value) for name, value in changes.items()]
        if reschedule is not None:
            next_fire, next_due = reschedule
            actions += self._next_actions(next_fire, next_due, keep_due=seen_pending)
            if seen_pending:
                actions.append(Set("due_at", now))
            if active and (seen_pending or next_due is not None):
                actions.append(Set("active_shard", shard_of(schedule_id, SCHEDULE_SHARDS)))
        cond = (A(REVISION) == seen_revision) & _pending(seen_pending)
        return self.commit(plan("update schedule", Update("schedules", (schedule_id,), tuple(actions), cond))).applied

    def pause_schedule(self, schedule_id: str) -> ScheduleRecord:
        """Pause (leave the due index; running runs go on). Raises ScheduleNotFound."""
        paused = self._apply("pause schedule", schedule_id, [Set("state", ScheduleState.PAUSED), Remove("active_shard"),
                                                             Add(REVISION, 1), Set("updated_at", self.now())],
                             A("schedule_id").exists())
        if paused is None:
            raise ScheduleNotFound(schedule_id)
        return paused

    def unpause_schedule(self, schedule_id: str, *, next_fire: float | None, next_due: float | None,
                         seen_pending: bool) -> ScheduleRecord | None:
        """Make a paused schedule active again (no backfill); None if its state changed since read."""
        now = self.now()
        actions = [Set("state", ScheduleState.ACTIVE), Add(REVISION, 1), Set("updated_at", now),
                   *self._next_actions(next_fire, next_due, keep_due=seen_pending)]
        if next_due is not None or seen_pending:
            actions.append(Set("active_shard", shard_of(schedule_id, SCHEDULE_SHARDS)))
        if seen_pending:
            actions.append(Set("due_at", now))
        paused = A("state") == ScheduleState.PAUSED
        return self._apply("unpause schedule", schedule_id, actions, paused & _pending(seen_pending))

    def delete_schedule(self, schedule_id: str) -> bool:
        """Delete; False if there was none (its running runs go on)."""
        return self.commit(plan("delete schedule", Delete("schedules", (schedule_id,),
                                                          A("schedule_id").exists()))).applied

    def _next_actions(self, next_fire: float | None, next_due: float | None, *, keep_due: bool) -> list[Action]:
        """Actions that set the next fire (removing it when none is left: due again to look after
        its last runs, see ``recheck_schedule``)."""
        if next_fire is None or next_due is None:
            actions: list[Action] = [Remove("next_fire_at"), Remove("next_due_at")]
            return actions if keep_due else [*actions, Set("due_at", self._recheck_at())]
        actions = [Set("next_fire_at", next_fire), Set("next_due_at", next_due)]
        return actions if keep_due else [*actions, Set("due_at", next_due)]

    def _recheck_at(self) -> float:
        return self.now() + min(self.settings.lease_seconds, 60.0)

    # -- fires ----------------------------------------------------------------------------------------
    @staticmethod
    def _fire_condition(expected_next: float | None) -> Cond:
        """No open claim, and (for a scheduled fire) the schedule active and still at ``expected_next``."""
        cond = A("schedule_id").exists() & A("pending").missing()
        if expected_next is not None:
            cond = cond & (A("next_fire_at") == expected_next) & (A("state") == ScheduleState.ACTIVE)
        return cond

    def _advance(self, advance: Advance | None, keep_due: bool) -> list[Action]:
        return [] if advance is None else self._next_actions(advance.next_fire, advance.next_due, keep_due=keep_due)

    def claim_fire(self, schedule_id: str, fire: float, run_id: str, *, lease_until: float,
                   advance: Advance | None = None, when_idle: bool = False) -> ScheduleRecord | None:
        """Claim ``fire`` to start its run (one beat wins); ``advance``: how a fire of the timetable moves
        the schedule on, conditioned on the ``next_fire_at`` read (None: a manual fire); ``when_idle``:
        only if no run is running. None if the condition failed."""
        expected_next = None if advance is None else advance.expected_next
        cond = self._fire_condition(expected_next)
        if when_idle:
            cond = cond & A("running").missing()
        actions = [Set("pending", fire), Set("due_at", lease_until), Add("running", frozenset({fire})), Add("fired", 1),
                   Set("last_run_id", run_id), *self._advance(advance, True)]
        if expected_next is not None:
            actions.append(Set("last_fire_at", fire))
        return self._apply("claim fire", schedule_id, actions, cond)

    def skip_fire(self, schedule_id: str, advance: Advance, *, when_running: bool = True) -> ScheduleRecord | None:
        """Skip a scheduled fire (counted) and move to the next one, while a run is running."""
        cond = self._fire_condition(advance.expected_next)
        if when_running:
            cond = cond & A("running").exists()
        return self._apply("skip fire", schedule_id, [Add("skipped", 1), *self._advance(advance, False)], cond)

    def buffer_fire(self, schedule_id: str, fire: float, *, advance: Advance | None = None,
                    replace: bool | None = None, only_first: bool = False) -> ScheduleRecord | None:
        """Keep ``fire`` to start when the running run ends (only while one runs); ``replace``: the
        buffer becomes just this fire (True: one was buffered, counted as skipped); ``only_first``:
        only if nothing is buffered yet."""
        expected_next = None if advance is None else advance.expected_next
        cond = self._fire_condition(expected_next) & A("running").exists()
        if only_first or replace is False:
            cond = cond & A("buffered").missing()
        actions = self._advance(advance, False)
        actions.append(Add("buffered", frozenset({fire})) if replace is None else Set("buffered", frozenset({fire})))
        if replace:
            cond = cond & A("buffered").exists()
            actions.append(Add("skipped", 1))
        if expected_next is not None:
            actions.append(Set("last_fire_at", fire))
        return self._apply("buffer fire", schedule_id, actions, cond)

    def promote_buffered(self, schedule_id: str, fire: float, run_id: str, *,
                         lease_until: float) -> ScheduleRecord | None:
        """Start the buffered ``fire`` (it joins ``running``, a claim opens) if nothing runs and the
        schedule is active."""
        cond = (self._fire_condition(None) & (A("state") == ScheduleState.ACTIVE) & A("running").missing()
                & A("buffered").contains(fire))
        return self._apply("start buffered fire", schedule_id, [
            DeleteFrom("buffered", frozenset({fire})), Add("running", frozenset({fire})), Set("pending", fire),
            Add("fired", 1), Set("due_at", lease_until), Set("last_run_id", run_id)], cond)

    def renew_claim(self, schedule_id: str, fire: float, seen_due: float, lease_until: float) -> bool:
        """Take over an open claim whose lease passed (one taker wins)."""
        return self.commit(plan("renew claim", Update("schedules", (schedule_id,), (Set("due_at", lease_until),),
                                                      (A("pending") == fire) & (A("due_at") == seen_due)))).applied

    def finish_fire(self, schedule_id: str, fire: float, error: str | None = None) -> ScheduleRecord | None:
        """Close the claim of ``fire``: the schedule is due at its next fire (two variants, in turn,
        as an update cannot copy a missing attribute); None if the claim was not open."""
        base: list[Action] = [Remove("pending"), Set("last_error", error[:2000]) if error else Remove("last_error")]
        if error:
            base.append(DeleteFrom("running", frozenset({fire})))
        for actions, extra in (([*base, Copy("due_at", "next_due_at")], A("next_due_at").exists()),
                               ([*base, Set("due_at", self._recheck_at())], A("next_due_at").missing())):
            after = self._apply("finish fire", schedule_id, actions, (A("pending") == fire) & extra)
            if after is not None:
                return after
        return None

    def recheck_schedule(self, schedule_id: str, *, keep: bool) -> ScheduleRecord | None:
        """A schedule with no fire left: due again later while ``keep``, else out of the due index.
        None if it has a claim or a fire."""
        actions: list[Action] = [Set("due_at", self._recheck_at())] if keep else [Remove("due_at"),
                                                                                  Remove("active_shard")]
        cond = A("schedule_id").exists() & A("pending").missing() & A("next_fire_at").missing()
        return self._apply("recheck schedule", schedule_id, actions, cond)

    def release_fire(self, schedule_id: str, fire: float) -> ScheduleRecord | None:
        """Take an ended fire out of ``running`` (idempotent); None if the schedule is gone."""
        return self._apply("release fire", schedule_id, [DeleteFrom("running", frozenset({fire})),
                                                         RemoveIn("heads", chain_key(fire))], A("schedule_id").exists())

    def advance_chain(self, schedule_id: str, fire: float, run_id: str) -> bool:
        """Record ``run_id`` as the latest run of the continue-as-new chain of ``fire`` (while it runs)."""
        return self.commit(plan("advance chain", Update("schedules", (schedule_id,),
                                                        (SetIn("heads", chain_key(fire), run_id),),
                                                        A("running").contains(fire)))).applied
