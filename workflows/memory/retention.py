"""Retention in memory: the ``by_retention`` index and the stamping of an ended run's items."""

from __future__ import annotations

from .base import MemoryBase
from .tables import Table


class RetentionTables(MemoryBase):
    """``runs_to_retain`` and ``retain_run``, request by request as the DynamoDB store does."""

    runs: Table
    events: Table
    joins: Table
    signal_items: Table
    hooks: Table
    guards: Table
    run_tags: Table
    timers: Table

    def runs_to_retain(self, ended_before: float, limit: int = 100) -> list[str]:
        """Ended runs not yet stamped that ended before ``ended_before``, a fair share from every shard."""
        items = self._read_shards(self.settings.index_shards, limit, lambda shard: self._pages(
            "query ended runs", self.runs, shard, index="by_retention", where=lambda at: at < ended_before))
        return [item["run_id"] for item in items]

