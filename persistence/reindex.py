"""Set the listing index keys (``status_shard``, ``workflow_shard``) on runs written without them,
and move tag index items written unsharded (``key=value``) to their shard (``key=value#<k>``).

Runs stored before the listing indexes were write-sharded carry neither attribute, so the
new ``by_status`` and ``by_workflow`` indexes do not hold them. An operator operation, not a
hot path: one Scan of the runs table, then one conditional update per run that lacks a key.
The condition is the status the Scan saw, so a status write meanwhile (which sets
``status_shard`` itself) is never overwritten with a stale key; such a run is read again.
"""

from __future__ import annotations

import functools

from pynamodb.exceptions import DoesNotExist

from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.listing import listing_key
from workflows.core.storage.tags import TAG_SHARDS

from .base import StoreBase

ATTEMPTS = 5


class ListingKeys(StoreBase):
    """The backfill of the listing index keys (``workflows init-aws`` runs it after it made the
    listing indexes; ``workflows runs reindex`` runs it by hand)."""

    @aws_actions("dynamodb:Scan@runs")
    def reindex_runs(self) -> int:
        """Give every run without its listing keys both keys; return how many runs were updated."""
        Run = self.m.Run
        missing = Run.status_shard.does_not_exist() | Run.workflow_shard.does_not_exist()
        with self.errors("scan runs"):
            run_ids = [item.run_id for item in Run.scan(missing, attributes_to_get=["run_id"])]
        return sum(self._reindex(run_id) for run_id in run_ids)

    @aws_actions("dynamodb:GetItem@runs", "dynamodb:UpdateItem@runs")
    def _reindex(self, run_id: str) -> bool:
        Run = self.m.Run
        for _ in range(ATTEMPTS):
            try:
                with self.errors("read run"):
                    item = Run.get(run_id, consistent_read=True)
            except DoesNotExist:
                return False
            status_key = listing_key(item.status, run_id, self.shards)
            workflow_key = listing_key(item.workflow, run_id, self.shards)
            if item.status_shard is not None and item.workflow_shard is not None:
                return False  # keyed already (under another shard count: still read)
            actions = [Run.workflow_shard.set(item.workflow_shard or workflow_key),
                       Run.status_shard.set(item.status_shard or status_key)]
            update = functools.partial(Run(run_id).update, actions=actions, condition=Run.status == item.status)
            if self.conditional("reindex run", update):
                return True
        return False

    @aws_actions("dynamodb:Scan@tags", "dynamodb:PutItem@tags", "dynamodb:DeleteItem@tags")
    def reindex_tags(self) -> int:
        """Move every tag index item written before tags were sharded (partition ``key=value``)
        to its shard's partition: a put of the same item under ``key=value#<k>``, then a delete of
        the old one (both idempotent). Return how many items were moved. One Scan.

        An item is in place when its partition is ``listing_key`` of its text without the last
        ``#<k>``; a value that itself ends in ``#<k>`` of the run's own shard would look in place.
        """
        Tag = self.m.Tag
        with self.errors("scan tags"):
            items = list(Tag.scan())
        moved = 0
        for item in items:
            text = item.tag.rsplit("#", 1)[0]
            if "#" in item.tag and item.tag == listing_key(text, item.run_id, TAG_SHARDS):
                continue
            copy = Tag(listing_key(item.tag, item.run_id, TAG_SHARDS), item.run_key, run_id=item.run_id,
                       workflow=item.workflow, created_at=item.created_at, retain_until=item.retain_until)
            with self.errors("move tag item"):
                copy.save()
                item.delete()
            moved += 1
        return moved
