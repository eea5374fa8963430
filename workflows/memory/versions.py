"""Deferring a run to another worker and copying a fork's history, in memory.

Each method makes the requests ``persistence.versions`` makes, with the same conditions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.model.records import EventRecord
from .base import MemoryBase
from .tables import Item, Table

#: Items per BatchWriteItem request (DynamoDB's limit).
BATCH_WRITE = 25


class VersionTables(MemoryBase):
    """``defer_run`` and ``copy_history`` of the in-memory store."""

    if TYPE_CHECKING:
        runs: Table
        events: Table
        timers: Table

    def copy_history(self, events: list[EventRecord]) -> None:
        """Write history records as given (BatchWriteItem, 25 a request, unconditional)."""
        items = [self.event_item(event) for event in events]
        for start in range(0, len(items), BATCH_WRITE):
            batch = items[start:start + BATCH_WRITE]

            def apply(batch: list[Item] = batch) -> None:
                for item in batch:
                    self.events.put(dict(item))

            self._request("copy history", apply)
