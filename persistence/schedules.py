"""Schedules: definitions, the sharded due index, fire claims and running-run bookkeeping.

Every change of a schedule's bookkeeping is one conditional or atomic update:

* A fire is claimed by an update conditioned on ``next_fire_at`` still being the value
  read (and on no other claim being open): it moves ``next_fire_at`` on, adds the fire
  time to ``running`` and opens a claim (``pending``) whose lease is ``due_at``. The
  claim is closed by :meth:`ScheduleStore.finish_fire` once the run exists. A claim
  whose claimer died becomes due again when its lease passes.
* ``running`` and ``buffered`` are number sets of fire times, changed only with
  DynamoDB ``ADD``/``DELETE`` (idempotent), and read only to choose which
  conditional update to try; each such update re-checks what it relied on.
"""

from __future__ import annotations

import json
from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.records import Page, ScheduleRecord, chain_key
from workflows.errors import ScheduleAlreadyExists, ScheduleNotFound

from .base import SCHEDULE_SHARDS, StoreBase, check_item_size, shard_of, to_json
from .runs import _decode_cursor, _encode_cursor

LISTING = "schedule"
CURSOR_KEYS = frozenset({"kind", "schedule_id"})


def _record(item: Any) -> ScheduleRecord:
    return ScheduleRecord(
        schedule_id=item.schedule_id, workflow=item.workflow, spec=json.loads(item.spec), overlap=item.overlap,
        args=item.args, state=item.state, catchup_window=item.catchup_window, created_at=item.created_at,
        updated_at=item.updated_at, next_fire_at=item.next_fire_at, next_due_at=item.next_due_at,
        due_at=item.due_at, pending=item.pending, running=sorted(item.running or ()),
        buffered=sorted(item.buffered or ()), heads=dict(item.heads.as_dict() if item.heads else {}),
        last_fire_at=item.last_fire_at, last_run_id=item.last_run_id,
        fired=int(item.fired or 0), skipped=int(item.skipped or 0), last_error=item.last_error,
        declared=bool(item.declared), version=int(item.version or 0),
    )


class ScheduleStore(StoreBase):
    """Schedule items and the due index beat reads (Query per shard, never a Scan)."""

    # -- definitions ----------------------------------------------------------------------
    def create_schedule(self, record: ScheduleRecord) -> ScheduleRecord:
        """Store a new schedule (active schedules with a next fire enter the due index).

        Raises:
            ScheduleAlreadyExists: a schedule has this id.
        """
        check_item_size({"args": record.args})
        now = self.now()
        S = self.m.Schedule
        item = S(record.schedule_id, kind=LISTING, workflow=record.workflow, spec=to_json(record.spec),
                 state=record.state, overlap=record.overlap, catchup_window=record.catchup_window,
                 args=record.args, heads={}, next_fire_at=record.next_fire_at, next_due_at=record.next_due_at,
                 due_at=record.next_due_at, active_shard=self._shard(record), fired=0, skipped=0,
                 created_at=now, updated_at=now, declared=record.declared, version=1)
        if not self.conditional("create schedule", lambda: item.save(condition=S.schedule_id.does_not_exist())):
            raise ScheduleAlreadyExists(record.schedule_id)
        return _record(item)

    def _shard(self, record: ScheduleRecord) -> str | None:
        active = record.state == "active" and record.next_due_at is not None
        return shard_of(record.schedule_id, SCHEDULE_SHARDS) if active else None

    def get_schedule(self, schedule_id: str) -> ScheduleRecord:
        """Return a schedule (consistent read).

        Raises:
            ScheduleNotFound: no schedule has this id.
        """
        try:
            with self.errors("read schedule"):
                return _record(self.m.Schedule.get(schedule_id, consistent_read=True))
        except DoesNotExist:
            raise ScheduleNotFound(schedule_id) from None

    def find_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """Return a schedule, or None."""
        try:
            return self.get_schedule(schedule_id)
        except ScheduleNotFound:
            return None

    def get_schedules(self, schedule_ids: list[str]) -> list[ScheduleRecord]:
        """Return the schedules that exist among ``schedule_ids``, in that order (consistent BatchGet)."""
        if not schedule_ids:
            return []
        with self.errors("read schedules"):
            found = {i.schedule_id: _record(i) for i in self.m.Schedule.batch_get(schedule_ids, consistent_read=True)}
        return [found[s] for s in dict.fromkeys(schedule_ids) if s in found]

    def list_schedules(self, *, workflow: str | None = None, state: str | None = None, limit: int = 50,
                       cursor: str | None = None) -> Page[ScheduleRecord]:
        """Return one page of schedules sorted by id (Query of the listing index)."""
        S = self.m.Schedule
        filters = None
        if workflow is not None:
            filters = S.workflow == workflow
        if state is not None:
            filters = (S.state == state) if filters is None else filters & (S.state == state)
        with self.errors("list schedules"):
            results = S.by_id.query(LISTING, filter_condition=filters, limit=limit,
                                    last_evaluated_key=_decode_cursor(cursor, CURSOR_KEYS))
            ids = [item.schedule_id for item in results]
            last = results.last_evaluated_key
        return Page(self.get_schedules(ids), _encode_cursor(last) if last else None)

    def update_schedule(self, schedule_id: str, seen_version: int, changes: dict[str, Any], *,
                        reschedule: tuple[float | None, float | None] | None, active: bool,
                        seen_pending: bool) -> bool:
        """Change a schedule's definition if it is still at ``seen_version`` (optimistic).

        Args:
            changes: attribute names (``spec`` as a dict) to new values.
            reschedule: the new ``(next_fire, next_due)``, or None to keep the next fire.
            active: the schedule is active (as read): it stays in the due index.
            seen_pending: a claim was open when read; its lease is cut short so beat
                finishes it at once.

        Returns:
            False if the schedule changed (or was deleted) since it was read.
        """
        S = self.m.Schedule
        now = self.now()
        if "args" in changes:
            check_item_size({"args": changes["args"]})
        actions = [S.version.add(1), S.updated_at.set(now)]
        for name, value in changes.items():
            actions.append(getattr(S, name).set(to_json(value) if name == "spec" else value))
        if reschedule is not None:
            next_fire, next_due = reschedule
            actions += self._next_actions(next_fire, next_due, keep_due=seen_pending)
            if seen_pending:
                actions.append(S.due_at.set(now))
            if active and (seen_pending or next_due is not None):
                actions.append(S.active_shard.set(shard_of(schedule_id, SCHEDULE_SHARDS)))
        cond = (S.version == seen_version) & (S.pending.exists() if seen_pending else S.pending.does_not_exist())
        return self.conditional("update schedule", lambda: S(schedule_id).update(actions=actions, condition=cond))

    def pause_schedule(self, schedule_id: str) -> ScheduleRecord:
        """Pause a schedule: it leaves the due index (running runs go on).

        Raises:
            ScheduleNotFound: no schedule has this id.
        """
        S = self.m.Schedule
        item = S(schedule_id)
        actions = [S.state.set("paused"), S.active_shard.remove(), S.version.add(1), S.updated_at.set(self.now())]
        if not self.conditional("pause schedule", lambda: item.update(actions=actions,
                                                                      condition=S.schedule_id.exists())):
            raise ScheduleNotFound(schedule_id)
        return _record(item)

    def resume_schedule(self, schedule_id: str, *, next_fire: float | None, next_due: float | None,
                        seen_pending: bool) -> ScheduleRecord | None:
        """Make a paused schedule active again, firing next at ``next_fire`` (no backfill).

        Returns None if the schedule was not paused or its claim state changed since read.
        """
        S = self.m.Schedule
        now = self.now()
        item = S(schedule_id)
        actions = [S.state.set("active"), S.version.add(1), S.updated_at.set(now),
                   *self._next_actions(next_fire, next_due, keep_due=seen_pending)]
        if next_due is not None or seen_pending:
            actions.append(S.active_shard.set(shard_of(schedule_id, SCHEDULE_SHARDS)))
        if seen_pending:
            actions.append(S.due_at.set(now))
        cond = (S.state == "paused") & (S.pending.exists() if seen_pending else S.pending.does_not_exist())
        ok = self.conditional("resume schedule", lambda: item.update(actions=actions, condition=cond))
        return _record(item) if ok else None

    def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule; False if there was none. Its running runs go on."""
        S = self.m.Schedule
        return self.conditional("delete schedule", lambda: S(schedule_id).delete(condition=S.schedule_id.exists()))

    def _next_actions(self, next_fire: float | None, next_due: float | None, *, keep_due: bool) -> list[Any]:
        """Actions that set the next fire (removing it, and the index entry, when none is left)."""
        S = self.m.Schedule
        if next_fire is None or next_due is None:  # due again to look after its last runs (``recheck_schedule``)
            actions = [S.next_fire_at.remove(), S.next_due_at.remove()]
            return actions if keep_due else [*actions, S.due_at.set(self._recheck_at())]
        actions = [S.next_fire_at.set(next_fire), S.next_due_at.set(next_due)]
        return actions if keep_due else [*actions, S.due_at.set(next_due)]

    # -- the due index ----------------------------------------------------------------------
    def due_schedules(self, now: float | None = None, limit: int = 500,
                      page_size: int | None = None) -> list[ScheduleRecord]:
        """Return schedules due at ``now``: a fair share of each shard (paged Queries), then a BatchGet."""
        now = self.now() if now is None else now
        S = self.m.Schedule
        ids = [item.schedule_id for item in self.read_shards(
            "query due schedules", SCHEDULE_SHARDS, limit,
            lambda shard: S.by_due.query(shard, S.due_at <= now, page_size=page_size))]
        found: list[ScheduleRecord] = []
        for start in range(0, len(ids), 100):
            found += self.get_schedules(ids[start:start + 100])
        return found

    # -- fires ------------------------------------------------------------------------------
    def _apply(self, action: str, schedule_id: str, actions: list[Any], cond: Any) -> ScheduleRecord | None:
        """Run one conditional update; return the schedule after it, or None if the condition failed."""
        item = self.m.Schedule(schedule_id)
        ok = self.conditional(action, lambda: item.update(actions=actions, condition=cond))
        return _record(item) if ok else None

    def _fire_condition(self, expected_next: float | None) -> Any:
        """No open claim, and (for a scheduled fire) the schedule active and still at ``expected_next``."""
        S = self.m.Schedule
        cond = S.schedule_id.exists() & S.pending.does_not_exist()
        if expected_next is not None:
            cond = cond & (S.next_fire_at == expected_next) & (S.state == "active")
        return cond

    def _advance(self, expected_next: float | None, next_fire: float | None, next_due: float | None,
                 keep_due: bool) -> list[Any]:
        return [] if expected_next is None else self._next_actions(next_fire, next_due, keep_due=keep_due)

    def claim_fire(self, schedule_id: str, fire: float, run_id: str, *, lease_until: float,
                   expected_next: float | None = None, next_fire: float | None = None,
                   next_due: float | None = None, when_idle: bool = False) -> ScheduleRecord | None:
        """Claim ``fire`` to start its run: it joins ``running`` and a claim opens until ``lease_until``.

        Args:
            expected_next: the ``next_fire_at`` read; a scheduled fire moves it to ``next_fire``.
                None for a manual fire (trigger, backfill), which leaves the next fire alone.
            when_idle: only if no run is running (the policy relied on it).

        Returns:
            The schedule after the claim; None if another beat claimed it first, or what
            the decision relied on changed.
        """
        S = self.m.Schedule
        cond = self._fire_condition(expected_next)
        if when_idle:
            cond = cond & S.running.does_not_exist()
        actions = [S.pending.set(fire), S.due_at.set(lease_until), S.running.add({fire}), S.fired.add(1),
                   S.last_run_id.set(run_id), *self._advance(expected_next, next_fire, next_due, True)]
        if expected_next is not None:
            actions.append(S.last_fire_at.set(fire))
        return self._apply("claim fire", schedule_id, actions, cond)

    def skip_fire(self, schedule_id: str, *, expected_next: float, next_fire: float | None,
                  next_due: float | None, when_running: bool = True) -> ScheduleRecord | None:
        """Skip a scheduled fire (counted) and move to the next one; only while a run is running."""
        S = self.m.Schedule
        cond = self._fire_condition(expected_next)
        if when_running:
            cond = cond & S.running.exists()
        actions = [S.skipped.add(1), *self._advance(expected_next, next_fire, next_due, False)]
        return self._apply("skip fire", schedule_id, actions, cond)

    def buffer_fire(self, schedule_id: str, fire: float, *, expected_next: float | None = None,
                    next_fire: float | None = None, next_due: float | None = None,
                    replace: bool | None = None, only_first: bool = False) -> ScheduleRecord | None:
        """Keep ``fire`` to start when the running run ends; only while a run is running.

        Args:
            replace: the buffer becomes just this fire (newest wins); True if a fire
                was buffered when read (it is counted as skipped), False if none was.
            only_first: only if nothing is buffered yet.
        """
        S = self.m.Schedule
        cond = self._fire_condition(expected_next) & S.running.exists()
        if only_first or replace is False:
            cond = cond & S.buffered.does_not_exist()
        actions = [*self._advance(expected_next, next_fire, next_due, False)]
        if replace is None:
            actions.append(S.buffered.add({fire}))
        else:
            actions.append(S.buffered.set({fire}))
        if replace:
            cond = cond & S.buffered.exists()
            actions.append(S.skipped.add(1))
        if expected_next is not None:
            actions.append(S.last_fire_at.set(fire))
        return self._apply("buffer fire", schedule_id, actions, cond)

    def promote_buffered(self, schedule_id: str, fire: float, run_id: str, *,
                         lease_until: float) -> ScheduleRecord | None:
        """Move the buffered ``fire`` to ``running`` and open its claim, if nothing runs and the schedule is active."""
        S = self.m.Schedule
        cond = (self._fire_condition(None) & (S.state == "active") & S.running.does_not_exist()
                & S.buffered.contains(fire))
        actions = [S.buffered.delete({fire}), S.running.add({fire}), S.pending.set(fire), S.fired.add(1),
                   S.due_at.set(lease_until), S.last_run_id.set(run_id)]
        return self._apply("start buffered fire", schedule_id, actions, cond)

    def renew_claim(self, schedule_id: str, fire: float, seen_due: float, lease_until: float) -> bool:
        """Take over an open claim whose lease passed (one taker wins)."""
        S = self.m.Schedule
        cond = (S.pending == fire) & (S.due_at == seen_due)
        return self.conditional("renew claim", lambda: S(schedule_id).update(
            actions=[S.due_at.set(lease_until)], condition=cond))

    def finish_fire(self, schedule_id: str, fire: float, error: str | None = None) -> ScheduleRecord | None:
        """Close the claim of ``fire`` (its run exists, or it failed for good); the schedule is due at its next fire.

        Returns the schedule after the update, or None if the claim was not open.
        """
        S = self.m.Schedule
        base = [S.pending.remove(), S.last_error.set(error[:2000]) if error else S.last_error.remove()]
        if error:
            base.append(S.running.delete({fire}))
        # Two variants, as an update cannot copy an attribute that may be missing: the
        # schedule is due at its next fire, or (none left) again later, to look after its runs.
        variants: list[tuple[list[Any], Any]] = [
            ([*base, S.due_at.set(S.next_due_at)], S.next_due_at.exists()),
            ([*base, S.due_at.set(self._recheck_at())], S.next_due_at.does_not_exist()),
        ]
        for actions, extra in variants:
            after = self._apply("finish fire", schedule_id, actions, (S.pending == fire) & extra)
            if after is not None:
                return after
        return None

    def _recheck_at(self) -> float:
        return self.now() + min(self.settings.lease_seconds, 60.0)

    def recheck_schedule(self, schedule_id: str, *, keep: bool) -> ScheduleRecord | None:
        """A schedule with no fire left: due again later while ``keep`` (runs of it run or
        wait in its buffer), else out of the due index. None if it has a claim or a fire."""
        S = self.m.Schedule
        actions = [S.due_at.set(self._recheck_at())] if keep else [S.due_at.remove(), S.active_shard.remove()]
        cond = S.schedule_id.exists() & S.pending.does_not_exist() & S.next_fire_at.does_not_exist()
        return self._apply("recheck schedule", schedule_id, actions, cond)

    def release_fire(self, schedule_id: str, fire: float) -> ScheduleRecord | None:
        """Take a fire's ended run out of ``running`` (idempotent); None if the schedule is gone."""
        S = self.m.Schedule
        item = S(schedule_id)
        ok = self.conditional("release fire", lambda: item.update(
            actions=[S.running.delete({fire}), S.heads[chain_key(fire)].remove()], condition=S.schedule_id.exists()))
        return _record(item) if ok else None

    def advance_chain(self, schedule_id: str, fire: float, run_id: str) -> bool:
        """Record ``run_id`` as the latest run of the continue-as-new chain of ``fire`` (while it runs)."""
        S = self.m.Schedule
        return self.conditional("advance chain", lambda: S(schedule_id).update(
            actions=[S.heads[chain_key(fire)].set(run_id)], condition=S.running.contains(fire)))
