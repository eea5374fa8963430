"""Durable timers in a sharded due-time index; firing is idempotent, never early."""

from __future__ import annotations

from workflows.core.model.records import TimerRecord
from workflows.core.storage.aws_actions import aws_actions

from .base import StoreBase


class TimerStore(StoreBase):
    """Timers: sleeps, hook and signal timeouts, retry backoffs, run deadlines."""

    @aws_actions("dynamodb:Query@timers/index")
    def due_timers(self, limit: int = 500, page_size: int | None = None) -> list[TimerRecord]:
        """Return timers due now, a fair share from every shard (paged Queries, never a Scan)."""
        now, Timer = self.now(), self.m.Timer
        items = self.read_shards("query due timers", self.shards, limit, lambda shard: Timer.by_due.query(
            shard, Timer.due_at <= now, page_size=page_size))
        return [TimerRecord(timer_id=item.timer_id, kind=item.kind, run_id=item.run_id, due_at=item.due_at,
                            pos=None if item.pos is None else int(item.pos), data=item.data, write_id=item.write_id)
                for item in items]

