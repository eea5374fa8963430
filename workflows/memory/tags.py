"""Run tags in memory: the ``tags`` table of index items, as the DynamoDB store keeps it."""

from __future__ import annotations

from typing import Any

from ..core.model.records import Page, RunRecord
from ..core.storage.listing import Position, merged_page, shard_key
from ..core.storage.tags import TAG_SHARDS, index_bound, index_sort_key, tag_text
from .base import MemoryBase
from .tables import Item, Table


class TagTables(MemoryBase):
    """``set_tags`` and ``list_runs(tag=...)`` over the runs, history and tags tables."""

    runs: Table
    events: Table
    run_tags: Table

    def _list_tagged(self, tag: tuple[str, str], *, workflow: str | None, limit: int, cursor: str | None,
                     since: float | None, until: float | None) -> Page[RunRecord]:
        """One page of the runs carrying ``tag``, newest first across the shards of its index items."""
        lo = index_bound(since if since is not None else 0)
        hi = index_bound(until if until is not None else 1e12) + "~"
        only: Any = (lambda item: item.get("workflow") == workflow) if workflow is not None else None
        text = tag_text(*tag)

        def query(shard: int, after: Position | None, count: int) -> tuple[list[Item], bool]:
            key = shard_key(text, shard)
            start = None if after is None else {"tag": key, "run_key": index_sort_key(*after)}
            items, last = self._limited("list runs by tag", self.run_tags, key, count, start,
                                        where=lambda run_key: lo <= run_key <= hi, forward=False, filter=only)
            return items, last is not None

        items, cursor_out = merged_page("tag", TAG_SHARDS, limit, cursor, query,
                                        lambda item: (item["created_at"], item["run_id"]))
        return Page(items=self.get_runs([item["run_id"] for item in items]),  # type: ignore[attr-defined]
                    next_cursor=cursor_out)
