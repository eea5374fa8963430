"""Run tags: one index item per tag and run, keyed ``key=value`` and sorted by the run's creation."""

from __future__ import annotations

from typing import Any

from workflows.core.records import EventRecord, Page, RunRecord
from workflows.core.tags import index_bound, index_key, index_sort_key, moved

from .base import LIVE_STATUSES, StoreBase, to_json
from .runs import _decode_cursor, _encode_cursor


class TagStore(StoreBase):
    """The ``tags`` table: what ``list_runs(tag=...)`` Queries (never a Scan)."""

    def tag_items(self, run: RunRecord) -> list[Any]:
        """The index items of a new run's tags (written with the run, in its transaction)."""
        return [self._tag_item(index_key(k, v), run) for k, v in sorted((run.tags or {}).items())]

    def _tag_item(self, tag: str, run: RunRecord) -> Any:
        return self.m.Tag(tag, index_sort_key(run.created_at, run.run_id), run_id=run.run_id, workflow=run.workflow,
                          created_at=run.created_at)

    def set_tags(self, event: EventRecord, run: RunRecord, before: dict[str, str], after: dict[str, str]) -> bool:
        """Record a ``set_tags`` outcome, set the run's tags and move their index items, in one
        transaction while the run is live; False if the slot is taken or the run has ended."""
        Run, Event = self.m.Run, self.m.Event
        gone, added = moved(before, after)
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
        """One page of the runs carrying ``tag``, newest first (a Query of its index items)."""
        Tag = self.m.Tag
        lo = index_bound(since if since is not None else 0)
        hi = index_bound(until if until is not None else 1e12) + "~"  # after every run id of that instant
        with self.errors("list runs by tag"):
            results = Tag.query(index_key(*tag), Tag.run_key.between(lo, hi), scan_index_forward=False,
                                limit=limit, last_evaluated_key=_decode_cursor(cursor, frozenset({"tag", "run_key"})),
                                filter_condition=(Tag.workflow == workflow) if workflow is not None else None)
            ids = [item.run_id for item in results]
            last = results.last_evaluated_key
        return Page(items=self.get_runs(ids), next_cursor=_encode_cursor(last))  # type: ignore[attr-defined]
