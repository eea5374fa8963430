"""Schedules in memory: the table and its reads, as ``persistence.schedules`` makes them (the
writes are shared: ``workflows.core.storage.writes.schedules``)."""

from __future__ import annotations

from ..core.model.records import Page, ScheduleRecord
from ..core.storage.rules import SCHEDULE_SHARDS
from ..core.storage.writes.schedules import LISTING, schedule_record
from ..errors import ScheduleNotFound
from .base import MemoryBase, decode_cursor, encode_cursor
from .tables import (
    Index,
    Item,
    Table,
)

CURSOR_KEYS = frozenset({"kind", "schedule_id"})


class ScheduleTables(MemoryBase):
    """The schedule table and the due index beat reads (a Query per shard)."""

    def _init_schedules(self) -> None:
        self.schedules = Table("schedules", "schedule_id", indexes={
            "by_due": Index("active_shard", "due_at"), "by_id": Index("kind", "schedule_id")})

    # -- definitions ----------------------------------------------------------------------------------
    def get_schedule(self, schedule_id: str) -> ScheduleRecord:
        """A schedule (consistent read). Raises ScheduleNotFound."""
        item = self._request("read schedule", lambda: self.schedules.get(schedule_id))
        if item is None:
            raise ScheduleNotFound(schedule_id)
        return schedule_record(item)

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
        return [schedule_record(found[(s,)]) for s in dict.fromkeys(schedule_ids) if (s,) in found]

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
