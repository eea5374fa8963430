"""Run tags: one index item per tag and run, keyed ``key=value`` and sorted by the run's creation."""

from __future__ import annotations

from typing import Any

from workflows.core.model.records import Page, RunRecord
from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.listing import Position, merged_page, shard_key
from workflows.core.storage.tags import TAG_SHARDS, index_bound, index_sort_key, tag_text

from .base import StoreBase


class TagStore(StoreBase):
    """The ``tags`` table: what ``list_runs(tag=...)`` Queries (never a Scan)."""

    @aws_actions("dynamodb:Query@tags")
    def list_tagged(self, tag: tuple[str, str], *, workflow: str | None = None, limit: int = 50,
                    cursor: str | None = None, since: float | None = None,
                    until: float | None = None) -> Page[RunRecord]:
        """One page of the runs carrying ``tag``, newest first across the shards of its index items."""
        Tag = self.m.Tag
        lo = index_bound(since if since is not None else 0)
        hi = index_bound(until if until is not None else 1e12) + "~"  # after every run id of that instant
        text = tag_text(*tag)

        def query(shard: int, after: Position | None, count: int) -> tuple[list[Any], bool]:
            key = shard_key(text, shard)
            start = None if after is None else {"tag": {"S": key}, "run_key": {"S": index_sort_key(*after)}}
            with self.errors("list runs by tag"):
                results = Tag.query(key, Tag.run_key.between(lo, hi), scan_index_forward=False, limit=count,
                                    last_evaluated_key=start,
                                    filter_condition=(Tag.workflow == workflow) if workflow is not None else None)
                items = list(results)
                return items, results.last_evaluated_key is not None

        items, cursor_out = merged_page("tag", TAG_SHARDS, limit, cursor, query,
                                        lambda item: (item.created_at, item.run_id))
        return Page(items=self.get_runs([item.run_id for item in items]),  # type: ignore[attr-defined]
                    next_cursor=cursor_out)
