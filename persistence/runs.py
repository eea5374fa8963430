"""Runs: creation with idempotency guards, leases, suspension, wake-ups, endings."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.model.records import (
    ANY_TIME,
    RUN_RESULT_SEQ,
    Page,
    RunRecord,
    RunSummary,
    TimeRange,
)
from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.writes.items import run_record
from workflows.errors import RunNotFound, SerializationError

from .base import plain
from .listing import ListingStore

if TYPE_CHECKING:
    pass


def _encode_cursor(key: dict[str, Any] | None) -> str | None:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode() if key else None


def _decode_cursor(cursor: str | None, keys: frozenset[str] | None = None) -> dict[str, Any] | None:
    """Decode a page cursor: the index's key attributes (``keys``), each a string or number value."""
    if not cursor:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError):
        value = None
    if not isinstance(value, dict) or (keys is not None and set(value) != keys) or not value or not all(
            isinstance(v, dict) and len(v) == 1 and isinstance(v.get("S", v.get("N")), str) for v in value.values()):
        raise SerializationError(f"invalid cursor {cursor!r}")
    return value


class RunStore(ListingStore):
    """Run items: the only mutable per-run state, always written conditionally."""

    @aws_actions("dynamodb:GetItem@idempotency")
    def run_for_key(self, key: str) -> str | None:
        """Return the run id an idempotency key maps to, if any."""
        try:
            with self.errors("read idempotency key"):
                return str(self.m.Guard.get(key, consistent_read=True).run_id)
        except DoesNotExist:
            return None

    @aws_actions("dynamodb:GetItem@runs")
    def get_run(self, run_id: str) -> RunRecord:
        """Return a run (consistent read).

        Raises:
            RunNotFound: no run has this id.
        """
        try:
            with self.errors("read run"):
                item = self.m.Run.get(run_id, consistent_read=True)
        except DoesNotExist:
            raise RunNotFound(run_id) from None
        return self._with_results([item])[0]

    @aws_actions("dynamodb:BatchGetItem@history")
    def _with_results(self, items: list[Any]) -> list[RunRecord]:
        """The runs of ``items``, with the results kept in the history read back (one BatchGet)."""
        records = [run_record(plain(item)) for item in items]
        outside = {r.run_id: r for r, item in zip(records, items, strict=True) if item.result_in_history}
        if outside:
            with self.errors("read run results"):
                for event in self.m.Event.batch_get([(run_id, RUN_RESULT_SEQ) for run_id in outside]):
                    outside[event.run_id].result = event.data
        return records

    def find_run(self, run_id: str) -> RunRecord | None:
        """Return a run, or None."""
        try:
            return self.get_run(run_id)
        except RunNotFound:
            return None

    def list_runs(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                  cursor: str | None = None, created: TimeRange = ANY_TIME,
                  tag: tuple[str, str] | None = None) -> Page[RunRecord]:
        """Return one page of runs, newest first, by status, workflow or tag (Query, never Scan)."""
        if tag is not None:
            if status is not None:
                raise ValueError("list_runs by tag does not combine with status")
            return self.list_tagged(tag, workflow=workflow, limit=limit, cursor=cursor,  # type: ignore[attr-defined]
                                    since=created.since, until=created.until)
        items, cursor_out = self._index_page(status, workflow, limit, cursor, created.since, created.until)
        return Page(items=self.get_runs([item.run_id for item in items]), next_cursor=cursor_out)

    def list_run_summaries(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                           cursor: str | None = None, created: TimeRange = ANY_TIME) -> Page[RunSummary]:
        """``list_runs`` from the index's projected fields alone: one Query per index shard a page."""
        items, cursor_out = self._index_page(status, workflow, limit, cursor, created.since, created.until)
        return Page(items=[RunSummary(item.run_id, item.workflow, item.status, item.created_at, item.ended_at,
                                      item.parent_run_id, item.schedule_id) for item in items],
                    next_cursor=cursor_out)

    @aws_actions("dynamodb:BatchGetItem@runs")
    def get_runs(self, run_ids: list[str]) -> list[RunRecord]:
        """Return runs by id, in the order given (BatchGet)."""
        if not run_ids:
            return []
        with self.errors("read runs"):
            found = {record.run_id: record for record in self._with_results(list(self.m.Run.batch_get(run_ids)))}
        return [found[r] for r in run_ids if r in found]

    @aws_actions("dynamodb:Query@runs/index")
    def stale_runs(self, limit: int = 100) -> list[str]:
        """Return runs whose lease has expired, a fair share from every shard of the lease index."""
        now, Run = self.now(), self.m.Run
        items = self.read_shards("query stale leases", self.shards, limit, lambda shard: Run.by_lease.query(
            shard, Run.lease_expires_at < now))
        return [item.run_id for item in items]

