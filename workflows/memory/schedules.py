"""Schedules in memory: definitions, the sharded due index, fire claims and running-run bookkeeping.

Each method makes the requests ``persistence.schedules`` makes, with the same
conditions; ``running`` and ``buffered`` are number sets changed by ADD/DELETE.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.records import Page, ScheduleRecord, chain_key
from ..core.storage import SCHEDULE_SHARDS, check_item_size, shard_of
from ..errors import ScheduleAlreadyExists, ScheduleNotFound
from .base import MemoryBase, decode_cursor, encode_cursor, to_json
from .tables import (
    Change,
    Condition,
    Index,
    Item,
    Table,
    absent,
    actions,
    add,
    copy_from,
    delete,
    present,
    remove,
    remove_in,
    set_,
    set_in,
)

LISTING = "schedule"
CURSOR_KEYS = frozenset({"kind", "schedule_id"})


def _record(item: Item) -> ScheduleRecord:
    return ScheduleRecord(
        schedule_id=item["schedule_id"], workflow=item["workflow"], spec=json.loads(item["spec"]),
        overlap=item["overlap"], args=item["args"], state=item["state"], catchup_window=item.get("catchup_window"),
        created_at=item["created_at"], updated_at=item["updated_at"], next_fire_at=item.get("next_fire_at"),
        next_due_at=item.get("next_due_at"), due_at=item.get("due_at"), pending=item.get("pending"),
        running=sorted(item.get("running") or ()), buffered=sorted(item.get("buffered") or ()),
        heads=dict(item.get("heads") or {}), last_fire_at=item.get("last_fire_at"),
        last_run_id=item.get("last_run_id"), fired=int(item.get("fired") or 0),
        skipped=int(item.get("skipped") or 0), last_error=item.get("last_error"),
        declared=bool(item.get("declared")), version=int(item.get("version") or 0),
    )


def _both(*conds: Condition) -> Condition:
    return lambda item: all(cond(item) for cond in conds)


def _equals(name: str, value: Any) -> Condition:
    return lambda item: name in item and item[name] == value


def _contains(name: str, member: Any) -> Condition:
    return lambda item: member in item.get(name, ())


class ScheduleTables(MemoryBase):
    """The schedule table and the due index beat reads (a Query per shard)."""

    def _init_schedules(self) -> None:
        self.schedules = Table("schedules", "schedule_id", indexes={
            "by_due": Index("active_shard", "due_at"), "by_id": Index("kind", "schedule_id")})

    # -- definitions ----------------------------------------------------------------------------------
    def create_schedule(self, record: ScheduleRecord) -> ScheduleRecord:
        """Store a new schedule. Raises ScheduleAlreadyExists."""
        check_item_size({"args": record.args})
        now = self.now()
        item: Item = {"schedule_id": record.schedule_id, "kind": LISTING, "workflow": record.workflow,
                "spec": to_json(record.spec), "state": record.state, "overlap": record.overlap,
                "catchup_window": record.catchup_window, "args": record.args, "heads": {},
                "next_fire_at": record.next_fire_at, "next_due_at": record.next_due_at, "due_at": record.next_due_at,
                "active_shard": self._shard(record), "fired": 0, "skipped": 0, "created_at": now,
                "updated_at": now, "declared": record.declared, "version": 1}
        if not self._write("create schedule", lambda: self.schedules.put(item, absent("schedule_id"))):
            raise ScheduleAlreadyExists(record.schedule_id)
        return _record(item)

    def _shard(self, record: ScheduleRecord) -> str | None:
        active = record.state == "active" and record.next_due_at is not None
        return shard_of(record.schedule_id, SCHEDULE_SHARDS) if active else None

    def get_schedule(self, schedule_id: str) -> ScheduleRecord:
        """A schedule (consistent read). Raises ScheduleNotFound."""
        item = self._request("read schedule", lambda: self.schedules.get(schedule_id))
        if item is None:
            raise ScheduleNotFound(schedule_id)
        return _record(item)

    def find_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """A schedule, or None."""
        try:
            return self.get_schedule(schedule_id)
        except ScheduleNotFound:
            return None

    def get_schedules(self, schedule_ids: list[str]) -> list[ScheduleRecord]:
        """The schedules that exist among ``schedule_ids``, in that order (BatchGet)."""
        if not schedule_ids:
            return []
        found = self._batch_get("read schedules", self.schedules, [(s,) for s in schedule_ids])
        return [_record(found[(s,)]) for s in dict.fromkeys(schedule_ids) if (s,) in found]

    def list_schedules(self, *, workflow: str | None = None, state: str | None = None, limit: int = 50,
                       cursor: str | None = None) -> Page[ScheduleRecord]:
        """One page of schedules sorted by id (Query of the listing index)."""
        def only(item: Item) -> bool:
            return (workflow is None or item.get("workflow") == workflow) and (
                state is None or item.get("state") == state)

        start = decode_cursor(cursor, CURSOR_KEYS)
        items, last = self._limited("list schedules", self.schedules, LISTING, limit, start, index="by_id",
                                    filter=only if workflow is not None or state is not None else None)
        return Page(self.get_schedules([item["schedule_id"] for item in items]), encode_cursor(last))

    def update_schedule(self, schedule_id: str, seen_version: int, changes: dict[str, Any], *,
                        reschedule: tuple[float | None, float | None] | None, active: bool,
                        seen_pending: bool) -> bool:
        """Change a definition if still at ``seen_version`` (optimistic); False if it changed."""
        now = self.now()
        if "args" in changes:
            check_item_size({"args": changes["args"]})
        steps = [add("version", 1), set_("updated_at", now)]
        steps += [set_(name, to_json(value) if name == "spec" else value) for name, value in changes.items()]
        if reschedule is not None:
            next_fire, next_due = reschedule
            steps += self._next_actions(next_fire, next_due, keep_due=seen_pending)
            if seen_pending:
                steps.append(set_("due_at", now))
            if active and (seen_pending or next_due is not None):
                steps.append(set_("active_shard", shard_of(schedule_id, SCHEDULE_SHARDS)))
        cond = _both(_equals("version", seen_version), present("pending") if seen_pending else absent("pending"))
        return self._write("update schedule", lambda: self.schedules.update((schedule_id,), actions(*steps), cond))

    def pause_schedule(self, schedule_id: str) -> ScheduleRecord:
        """Pause (leave the due index). Raises ScheduleNotFound."""
        change = actions(set_("state", "paused"), remove("active_shard"), add("version", 1),
                         set_("updated_at", self.now()))
        after = self._update("pause schedule", self.schedules, (schedule_id,), change, present("schedule_id"))
        if after is None:
            raise ScheduleNotFound(schedule_id)
        return _record(after)

    def resume_schedule(self, schedule_id: str, *, next_fire: float | None, next_due: float | None,
                        seen_pending: bool) -> ScheduleRecord | None:
        """Make a paused schedule active again; None if its state changed since read."""
        now = self.now()
        steps = [set_("state", "active"), add("version", 1), set_("updated_at", now),
                 *self._next_actions(next_fire, next_due, keep_due=seen_pending)]
        if next_due is not None or seen_pending:
            steps.append(set_("active_shard", shard_of(schedule_id, SCHEDULE_SHARDS)))
        if seen_pending:
            steps.append(set_("due_at", now))
        cond = _both(_equals("state", "paused"), present("pending") if seen_pending else absent("pending"))
        after = self._update("resume schedule", self.schedules, (schedule_id,), actions(*steps), cond)
        return None if after is None else _record(after)

    def delete_schedule(self, schedule_id: str) -> bool:
        """Delete; False if there was none."""
        return self._write("delete schedule", lambda: self.schedules.delete((schedule_id,), present("schedule_id")))

    def _next_actions(self, next_fire: float | None, next_due: float | None, *, keep_due: bool) -> list[Change]:
        """Actions that set the next fire (removing it, and the index entry, when none is left)."""
        if next_fire is None or next_due is None:  # due again to look after its last runs (``recheck_schedule``)
            steps = [remove("next_fire_at"), remove("next_due_at")]
            return steps if keep_due else [*steps, set_("due_at", self._recheck_at())]
        steps = [set_("next_fire_at", next_fire), set_("next_due_at", next_due)]
        return steps if keep_due else [*steps, set_("due_at", next_due)]

    # -- the due index --------------------------------------------------------------------------------
    def due_schedules(self, now: float | None = None, limit: int = 500,
                      page_size: int | None = None) -> list[ScheduleRecord]:
        """Schedules due at ``now``: a paged Query per shard, then BatchGets."""
        at = self.now() if now is None else now
        ids = [item["schedule_id"] for item in self._read_shards(SCHEDULE_SHARDS, limit, lambda shard: self._pages(
            "query due schedules", self.schedules, shard, index="by_due", where=lambda due: due <= at,
            limit=page_size))]
        found: list[ScheduleRecord] = []
        for first in range(0, len(ids), 100):
            found += self.get_schedules(ids[first:first + 100])
        return found

    # -- fires ----------------------------------------------------------------------------------------
    def _apply(self, name: str, schedule_id: str, steps: list[Change], cond: Condition) -> ScheduleRecord | None:
        after = self._update(name, self.schedules, (schedule_id,), actions(*steps), cond)
        return None if after is None else _record(after)

    def _fire_condition(self, expected_next: float | None) -> Condition:
        """No open claim, and (for a scheduled fire) the schedule active and still at ``expected_next``."""
        conds = [present("schedule_id"), absent("pending")]
        if expected_next is not None:
            conds += [_equals("next_fire_at", expected_next), _equals("state", "active")]
        return _both(*conds)

    def _advance(self, expected_next: float | None, next_fire: float | None, next_due: float | None,
                 keep_due: bool) -> list[Change]:
        return [] if expected_next is None else self._next_actions(next_fire, next_due, keep_due=keep_due)

    def claim_fire(self, schedule_id: str, fire: float, run_id: str, *, lease_until: float,
                   expected_next: float | None = None, next_fire: float | None = None,
                   next_due: float | None = None, when_idle: bool = False) -> ScheduleRecord | None:
        """Claim a fire (one beat wins); None if the condition failed."""
        cond = self._fire_condition(expected_next)
        if when_idle:
            cond = _both(cond, absent("running"))
        steps = [set_("pending", fire), set_("due_at", lease_until), add("running", {fire}), add("fired", 1),
                 set_("last_run_id", run_id), *self._advance(expected_next, next_fire, next_due, True)]
        if expected_next is not None:
            steps.append(set_("last_fire_at", fire))
        return self._apply("claim fire", schedule_id, steps, cond)

    def skip_fire(self, schedule_id: str, *, expected_next: float, next_fire: float | None,
                  next_due: float | None, when_running: bool = True) -> ScheduleRecord | None:
        """Skip a scheduled fire (counted) while a run is running."""
        cond = self._fire_condition(expected_next)
        if when_running:
            cond = _both(cond, present("running"))
        steps = [add("skipped", 1), *self._advance(expected_next, next_fire, next_due, False)]
        return self._apply("skip fire", schedule_id, steps, cond)

    def buffer_fire(self, schedule_id: str, fire: float, *, expected_next: float | None = None,
                    next_fire: float | None = None, next_due: float | None = None,
                    replace: bool | None = None, only_first: bool = False) -> ScheduleRecord | None:
        """Buffer a fire to start when the running run ends (only while one runs)."""
        conds = [self._fire_condition(expected_next), present("running")]
        if only_first or replace is False:
            conds.append(absent("buffered"))
        steps = [*self._advance(expected_next, next_fire, next_due, False)]
        steps.append(add("buffered", {fire}) if replace is None else set_("buffered", {fire}))
        if replace:
            conds.append(present("buffered"))
            steps.append(add("skipped", 1))
        if expected_next is not None:
            steps.append(set_("last_fire_at", fire))
        return self._apply("buffer fire", schedule_id, steps, _both(*conds))

    def promote_buffered(self, schedule_id: str, fire: float, run_id: str, *,
                         lease_until: float) -> ScheduleRecord | None:
        """Start a buffered fire if nothing runs and the schedule is active."""
        cond = _both(self._fire_condition(None), _equals("state", "active"), absent("running"),
                     _contains("buffered", fire))
        steps = [delete("buffered", {fire}), add("running", {fire}), set_("pending", fire), add("fired", 1),
                 set_("due_at", lease_until), set_("last_run_id", run_id)]
        return self._apply("start buffered fire", schedule_id, steps, cond)

    def renew_claim(self, schedule_id: str, fire: float, seen_due: float, lease_until: float) -> bool:
        """Take over an open claim whose lease passed (one taker wins)."""
        cond = _both(_equals("pending", fire), _equals("due_at", seen_due))
        return self._write("renew claim", lambda: self.schedules.update(
            (schedule_id,), set_("due_at", lease_until), cond))

    def finish_fire(self, schedule_id: str, fire: float, error: str | None = None) -> ScheduleRecord | None:
        """Close the claim of ``fire``; None if it was not open (two conditional variants, in turn)."""
        base = [remove("pending"), set_("last_error", error[:2000]) if error else remove("last_error")]
        if error:
            base.append(delete("running", {fire}))
        variants: list[tuple[list[Change], Condition]] = [
            ([*base, copy_from("due_at", "next_due_at")], present("next_due_at")),
            ([*base, set_("due_at", self._recheck_at())], absent("next_due_at")),
        ]
        for steps, extra in variants:
            after = self._apply("finish fire", schedule_id, steps, _both(_equals("pending", fire), extra))
            if after is not None:
                return after
        return None

    def _recheck_at(self) -> float:
        return self.now() + min(self.settings.lease_seconds, 60.0)

    def recheck_schedule(self, schedule_id: str, *, keep: bool) -> ScheduleRecord | None:
        """A schedule with no fire left: due again later while ``keep`` (runs of it run or
        wait in its buffer), else out of the due index. None if it has a claim or a fire."""
        steps = [set_("due_at", self._recheck_at())] if keep else [remove("due_at"), remove("active_shard")]
        return self._apply("recheck schedule", schedule_id, steps,
                           _both(present("schedule_id"), absent("pending"), absent("next_fire_at")))

    def release_fire(self, schedule_id: str, fire: float) -> ScheduleRecord | None:
        """Take an ended fire out of ``running`` (idempotent); None if the schedule is gone."""
        steps = [delete("running", {fire}), remove_in("heads", chain_key(fire))]
        return self._apply("release fire", schedule_id, steps, present("schedule_id"))

    def advance_chain(self, schedule_id: str, fire: float, run_id: str) -> bool:
        """Record the latest run of a fire's continue-as-new chain (while the fire runs)."""
        return self._write("advance chain", lambda: self.schedules.update(
            (schedule_id,), set_in("heads", chain_key(fire), run_id), _contains("running", fire)))
