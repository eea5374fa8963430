"""Deferring a run to another worker, and copying a fork's history (see docs/versioning.md)."""

from __future__ import annotations

from workflows.core.model.records import EventRecord
from workflows.core.storage.aws_actions import aws_actions

from .history import HistoryStore
from .plans import PlanStore


class VersionStore(HistoryStore):
    """``defer_run`` and ``copy_history``: what versioning and forks add to the store."""

    @aws_actions("dynamodb:BatchWriteItem@history")
    def copy_history(self, events: list[EventRecord]) -> None:
        """Write history records as given (BatchWriteItem, unconditional: the run they belong to
        is not created yet, and a retry writes the same records)."""
        items = [self.event_item(event) for event in events]
        with self.errors("copy history"), self.m.Event.batch_write() as batch:
            for item in items:
                batch.save(PlanStore.instance(self.m.Event, item))
