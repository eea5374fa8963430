"""Durable timers in a sharded due-time index; firing is idempotent, never early."""

from __future__ import annotations

from workflows.core.records import TimerRecord

from .base import TIMER_SHARDS, StoreBase


class TimerStore(StoreBase):
    """Timers: sleeps, hook and signal timeouts, retry backoffs, run deadlines."""

    def put_timer(self, timer: TimerRecord) -> None:
        """Store (or replace) a timer."""
        item = self.timer_item(timer)
        with self.errors("put timer"):
            item.save()

    def due_timers(self, limit: int = 500, page_size: int | None = None) -> list[TimerRecord]:
        """Return timers due now from every shard (paged Queries, never a Scan)."""
        now, found = self.now(), []
        for shard in range(TIMER_SHARDS):
            with self.errors("query due timers"):
                for item in self.m.Timer.by_due.query(str(shard), self.m.Timer.due_at <= now,
                                                        page_size=page_size):
                    found.append(TimerRecord(timer_id=item.timer_id, kind=item.kind, run_id=item.run_id,
                                             due_at=item.due_at, pos=None if item.pos is None else int(item.pos),
                                             data=item.data))
                    if len(found) >= limit:
                        return found
        return found

    def claim_timer(self, timer_id: str) -> bool:
        """Delete a timer if it still exists; True for the one caller that deleted it."""
        Timer = self.m.Timer
        return self.conditional("claim timer", lambda: Timer(timer_id).delete(condition=Timer.timer_id.exists()))

    def delete_timer(self, timer_id: str) -> None:
        """Delete a timer (fired or cancelled); deleting a missing one is fine."""
        with self.errors("delete timer"):
            self.m.Timer(timer_id).delete()
