"""Run tags in memory: the ``tags`` table of index items, as the DynamoDB store keeps it."""

from __future__ import annotations

from typing import Any

from ..core.listing import Position, merged_page, shard_key
from ..core.records import LIVE, EventRecord, Page, RunRecord
from ..core.tags import TAG_SHARDS, index_bound, index_key, index_sort_key, moved, tag_text
from .base import MemoryBase, to_json
from .tables import Delete, Item, Put, Table, Update, Write, absent, set_


class TagTables(MemoryBase):
    """``set_tags`` and ``list_runs(tag=...)`` over the runs, history and tags tables."""

    runs: Table
    events: Table
    run_tags: Table

    def _tag_items(self, run: RunRecord) -> list[Item]:
        """The index items of a run's tags (written with the run, in its transaction)."""
        return [self._tag_item(index_key(k, v, run.run_id), run) for k, v in sorted((run.tags or {}).items())]

    @staticmethod
    def _tag_item(tag: str, run: RunRecord) -> Item:
        return {"tag": tag, "run_key": index_sort_key(run.created_at, run.run_id), "run_id": run.run_id,
                "workflow": run.workflow, "created_at": run.created_at}

    def set_tags(self, event: EventRecord, run: RunRecord, before: dict[str, str], after: dict[str, str]) -> bool:
        """Record a ``set_tags`` outcome, set the run's tags and move their index items, in one
        transaction while the run is live; False if the slot is taken or the run has ended."""
        gone, added = moved(before, after, run.run_id)
        sort_key = index_sort_key(run.created_at, run.run_id)
        ops: list[Write] = [Put(self.events, self._event_item(event), absent("seq")),  # type: ignore[attr-defined]
                            Update(self.runs, (run.run_id,), set_("tags", to_json(after)),
                                   lambda item: item.get("status") in LIVE)]
        ops += [Delete(self.run_tags, (tag, sort_key)) for tag in gone]
        ops += [Put(self.run_tags, self._tag_item(tag, run)) for tag in added]
        return self._transact("set tags", ops)

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
