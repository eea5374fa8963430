"""Schedules: their reads (the definitions by id, the listing, the sharded due index).

The writes are shared: ``workflows.core.storage.writes.schedules``.
"""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist

from workflows.core.model.records import Page, ScheduleRecord
from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.writes.schedules import LISTING, schedule_record
from workflows.errors import ScheduleNotFound

from .base import SCHEDULE_SHARDS, StoreBase, plain
from .runs import _decode_cursor, _encode_cursor

CURSOR_KEYS = frozenset({"kind", "schedule_id"})


class ScheduleStore(StoreBase):
    """Schedule items and the due index beat reads (Query per shard, never a Scan)."""

    # -- definitions ----------------------------------------------------------------------
    @aws_actions("dynamodb:GetItem@schedules")
    def get_schedule(self, schedule_id: str) -> ScheduleRecord:
        """Return a schedule (consistent read).

        Raises:
            ScheduleNotFound: no schedule has this id.
        """
        try:
            with self.errors("read schedule"):
                return schedule_record(plain(self.m.Schedule.get(schedule_id, consistent_read=True)))
        except DoesNotExist:
            raise ScheduleNotFound(schedule_id) from None

    def find_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """Return a schedule, or None."""
        try:
            return self.get_schedule(schedule_id)
        except ScheduleNotFound:
            return None

    @aws_actions("dynamodb:BatchGetItem@schedules")
    def get_schedules(self, schedule_ids: list[str]) -> list[ScheduleRecord]:
        """Return the schedules that exist among ``schedule_ids``, in that order (consistent BatchGet)."""
        if not schedule_ids:
            return []
        with self.errors("read schedules"):
            items = self.m.Schedule.batch_get(schedule_ids, consistent_read=True)
            found = {i.schedule_id: schedule_record(plain(i)) for i in items}
        return [found[s] for s in dict.fromkeys(schedule_ids) if s in found]

    @aws_actions("dynamodb:Query@schedules/index")
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

    # -- the due index ----------------------------------------------------------------------
    @aws_actions("dynamodb:Query@schedules/index")
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
