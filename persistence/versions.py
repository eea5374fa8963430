"""Deferring a run to another worker, and copying a fork's history (see docs/versioning.md)."""

from __future__ import annotations

from typing import Any

from workflows.core.records import EventRecord, TimerRecord

from .base import LIVE_STATUSES, to_json
from .history import HistoryStore


class VersionStore(HistoryStore):
    """``defer_run`` and ``copy_history``: what versioning and forks add to the store."""

    def defer_run(self, run_id: str, seen_wake: int, timer: TimerRecord,
                  deferral: dict[str, Any] | None = None) -> bool:
        """Leave a run this worker cannot serve to another: suspended (cursor and waiting kept),
        no lease, no claim, its ``deferral`` (if given), and a ``wake`` timer, in one transaction.
        Condition: live, not woken since ``seen_wake`` was read, not claimed by a resume whose
        lease is live."""
        Run = self.m.Run
        now = self.now()
        free = Run.owner.does_not_exist() | (Run.lease_expires_at < now)
        cond = (Run.wake_seq == seen_wake) & Run.status.is_in(*LIVE_STATUSES) & free
        actions = [*self.status_actions(run_id, "suspended"), Run.lease_expires_at.remove(), Run.owner.remove(),
                   Run.updated_at.set(now)]
        if deferral is not None:
            actions.append(Run.deferral.set(to_json(deferral)))

        def build(tx: Any) -> None:
            tx.update(Run(run_id), actions=actions, condition=cond)
            tx.save(self.timer_item(timer))

        return self.transact("defer run", build)

    def copy_history(self, events: list[EventRecord]) -> None:
        """Write history records as given (BatchWriteItem, unconditional: the run they belong to
        is not created yet, and a retry writes the same records)."""
        items = [self.event_item(event) for event in events]
        with self.errors("copy history"), self.m.Event.batch_write() as batch:
            for item in items:
                batch.save(item)
