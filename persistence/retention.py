"""Retention: stamp every item of an ended run with its TTL (see ``workflows.core.storage.retention``)."""

from __future__ import annotations

from workflows.core.storage.aws_actions import aws_actions

from .base import StoreBase


class RetentionStore(StoreBase):
    """The sparse ``by_retention`` index of ended runs and the stamping of their items."""

    @aws_actions("dynamodb:Query@runs/index")
    def runs_to_retain(self, ended_before: float, limit: int = 100) -> list[str]:
        """Ended runs not yet stamped that ended before ``ended_before``, a fair share from every shard."""
        Run = self.m.Run
        items = self.read_shards("query ended runs", self.shards, limit, lambda shard: Run.by_retention.query(
            shard, Run.ended_at < ended_before))
        return [item.run_id for item in items]

