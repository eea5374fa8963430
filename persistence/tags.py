"""Run tags: one index item per tag and run, keyed ``key=value`` and sorted by the run's creation."""

from __future__ import annotations

from typing import Any

from workflows.core.listing import Position, merged_page, shard_key
from workflows.core.records import EventRecord, Page, RunRecord
from workflows.core.tags import TAG_SHARDS, index_bound, index_key, index_sort_key, moved, tag_text

from .base import LIVE_STATUSES, StoreBase, to_json


class TagStore(StoreBase):
    """The ``tags`` table: what ``list_runs(tag=...)`` Queries (never a Scan)."""

    def tag_items(self, run: RunRecord) -> list[Any]:
        """The index items of a new run's tags (written with the run, in its transaction)."""
        tags = sorted((run.tags or {}).items())
        return [self._tag_item(index_key(k, v, run.run_id), run) for k, v in tags]

    def _tag_item(self, tag: str, run: RunRecord) -> Any:
        return self.m.Tag(tag, index_sort_key(run.created_at, run.run_id), run_id=run.run_id, workflow=run.workflow,
                          created_at=run.created_at)

    def set_tags(self, event: EventRecord, run: RunRecord, before: dict[str, str], after: dict[str, str]) -> bool:
        """Record a ``set_tags`` outcome, set the run's tags and move their index items, in one
        transaction while the run is live; False if the slot is taken or the run has ended."""
        Run, Event = self.m.Run, self.m.Event
        gone, added = moved(before, after, run.run_id)
        sort_key = index_sort_key(run.created_at, run.run_id)

        def build(tx: Any) -> None:
            tx.save(self.event_item(event), condition=Event.seq.does_not_exist())  # type: ignore[attr-defined]
            tx.update(Run(run.run_id), actions=[Run.tags.set(to_json(after))],
                      condition=Run.status.is_in(*LIVE_STATUSES))
            for tag in gone:
                tx.delete(self.m.Tag(tag, sort_key))
            for tag in added:
                tx.save(self._tag_item(tag, run))

        return self.transact("set tags", build)

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
