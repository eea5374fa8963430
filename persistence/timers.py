"""Durable timers in a sharded due-time index; firing is idempotent, never early."""

from __future__ import annotations

from workflows.core.records import TimerRecord
from workflows.core.storage import new_request

from .base import StoreBase


class TimerStore(StoreBase):
    """Timers: sleeps, hook and signal timeouts, retry backoffs, run deadlines."""

    def put_timer(self, timer: TimerRecord) -> None:
        """Store (or replace) a timer."""
        item = self.timer_item(timer)
        with self.errors("put timer"):
            item.save()

    def due_timers(self, limit: int = 500, page_size: int | None = None) -> list[TimerRecord]:
        """Return timers due now, a fair share from every shard (paged Queries, never a Scan)."""
        now, Timer = self.now(), self.m.Timer
        items = self.read_shards("query due timers", self.shards, limit, lambda shard: Timer.by_due.query(
            shard, Timer.due_at <= now, page_size=page_size))
        return [TimerRecord(timer_id=item.timer_id, kind=item.kind, run_id=item.run_id, due_at=item.due_at,
                            pos=None if item.pos is None else int(item.pos), data=item.data, version=item.version)
                for item in items]

    def claim_timer(self, timer_id: str, version: str | None = None) -> bool:
        """Take the firing of a timer for a lease (version ``version``, if given): True for
        the one caller that took it, a retry of its own lost request too (the claim carries
        a request id). A claimer that died lets the next sweep take it after the lease."""
        Timer, now, req = self.m.Timer, self.now(), new_request()
        cond = Timer.timer_id.exists() if version is None else Timer.version == version
        cond = cond & (Timer.claimed_at.does_not_exist() | (Timer.claimed_at < now - self.settings.lease_seconds))
        actions = [Timer.claimed_at.set(now), Timer.req.set(req)]
        return self.conditional("claim timer", lambda: Timer(timer_id).update(actions=actions, condition=cond),
                                own=lambda: self.carries("read timer", Timer, timer_id, req))

    def delete_timer(self, timer_id: str, version: str | None = None) -> None:
        """Delete a timer (fired or cancelled); deleting a missing one is fine. ``version``: only
        that write of it (a timer written again since it was read, e.g. by a run that
        suspended again on it, stays)."""
        Timer = self.m.Timer
        if version is None:
            with self.errors("delete timer"):
                Timer(timer_id).delete()
            return
        self.conditional("delete timer", lambda: Timer(timer_id).delete(condition=Timer.version == version))
