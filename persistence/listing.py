"""Run listings and counts over the write-sharded status and workflow indexes (see core.storage.listing)."""

from __future__ import annotations

import json
from typing import Any

from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.listing import Position, merged_page, shard_key

from .base import StoreBase


class ListingStore(StoreBase):
    """Queries of ``by_status`` (``<status>#<k>``) and ``by_workflow`` (``<workflow>#<k>``), merged newest first."""

    @aws_actions("dynamodb:Query@runs/index")
    def _index_page(self, status: str | None, workflow: str | None, limit: int, cursor: str | None,
                    since: float | None, until: float | None) -> tuple[list[Any], str | None]:
        """One page of a listing index's items, newest first across its shards, and the cursor of the next.

        By status and workflow: the status index, filtered on the workflow.
        """
        if status is None and workflow is None:
            raise ValueError("list_runs needs status= or workflow=")
        Run = self.m.Run
        by_status = status is not None
        index, value, key_name = ((Run.by_status, status, "status_shard") if by_status
                                  else (Run.by_workflow, workflow, "workflow_shard"))
        lo, hi = since if since is not None else 0, until if until is not None else 1e12
        only = (Run.workflow == workflow) if by_status and workflow is not None else None

        def query(shard: int, after: Position | None, count: int) -> tuple[list[Any], bool]:
            key = shard_key(str(value), shard)
            start = None if after is None else {
                key_name: {"S": key}, "created_at": {"N": json.dumps(after[0])}, "run_id": {"S": after[1]}}
            with self.errors("list runs"):
                results = index.query(key, range_key_condition=Run.created_at.between(lo, hi),
                                      scan_index_forward=False, limit=count, last_evaluated_key=start,
                                      filter_condition=only)
                items = list(results)
                return items, results.last_evaluated_key is not None

        return merged_page("status" if by_status else "workflow", self.shards, limit, cursor, query,
                           lambda item: (item.created_at, item.run_id))

    @aws_actions("dynamodb:Query@runs/index")
    def count_runs(self, status: str, *, since: float | None = None, until: float | None = None,
                   cap: int = 10_000) -> tuple[int, bool]:
        """How many runs have ``status`` (created within the bounds), counting at most ``cap``:
        Queries of every shard of the status index with Select COUNT, paged, stopping past the cap."""
        lo, hi = since if since is not None else 0, until if until is not None else 1e12
        Run, found = self.m.Run, 0
        with self.errors("count runs"):
            for shard in range(self.shards):
                start = None
                while found <= cap:  # each page evaluates at most what is left to pass the cap (and at most 1 MB)
                    page = Run._get_connection().query(
                        shard_key(status, shard), range_key_condition=Run.created_at.between(lo, hi),
                        index_name="by_status", select="COUNT", limit=cap + 1 - found, exclusive_start_key=start)
                    found, start = found + page["Count"], page.get("LastEvaluatedKey")
                    if start is None:
                        break
                if found > cap:
                    break
        return min(found, cap), found > cap
