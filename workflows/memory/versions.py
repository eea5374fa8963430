"""Deferring a run to another worker and copying a fork's history, in memory.

Each method makes the requests ``persistence.versions`` makes, with the same conditions.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from ..core.records import LIVE, EventRecord, TimerRecord
from .base import MemoryBase
from .tables import Item, Put, Table, Update, Write, actions, remove, set_

#: Items per BatchWriteItem request (DynamoDB's limit).
BATCH_WRITE = 25


class VersionTables(MemoryBase):
    """``defer_run`` and ``copy_history`` of the in-memory store."""

    if TYPE_CHECKING:
        runs: Table
        events: Table
        timers: Table

        def _timer_item(self, timer: TimerRecord) -> Item: ...

        def _event_item(self, event: EventRecord) -> Item: ...

    def defer_run(self, run_id: str, seen_wake: int, timer: TimerRecord,
                  deferral: dict[str, Any] | None = None) -> bool:
        """Leave a run to another worker: suspended, no lease, its deferral, a wake timer (one transaction)."""
        now = self.now()

        def cond(item: Item) -> bool:
            free = item.get("owner") is None or item.get("lease_expires_at", math.inf) < now
            return item.get("status") in LIVE and item.get("wake_seq") == seen_wake and free

        noted = [] if deferral is None else [set_("deferral", json.dumps(deferral, separators=(",", ":")))]
        change = actions(set_("status", "suspended"), remove("lease_expires_at"), remove("owner"),
                         set_("updated_at", now), *noted)
        ops: list[Write] = [Update(self.runs, (run_id,), change, cond),
                            Put(self.timers, self._timer_item(timer))]
        return self._transact("defer run", ops)

    def copy_history(self, events: list[EventRecord]) -> None:
        """Write history records as given (BatchWriteItem, 25 a request, unconditional)."""
        items = [self._event_item(event) for event in events]
        for start in range(0, len(items), BATCH_WRITE):
            batch = items[start:start + BATCH_WRITE]

            def apply(batch: list[Item] = batch) -> None:
                for item in batch:
                    self.events.put(dict(item))

            self._request("copy history", apply)
