"""Batch items: create, claim, advance and end a batch, each write conditioned on its version.

A live batch is the item ``("live", batch_id)`` of the ``batches`` table; its end moves it to
``("ended", batch_id)`` (one transaction: the live item deleted on its revision, the ended one
put with its TTL), so beat's Query of live batches reads only those. Every write sets a
fresh revision (stored as ``version``) and ``req``; a write whose response was lost recognises itself by ``req``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ...model.batches import ENDED_PART, LIVE_PART, BatchRecord, Progress, Selection, kept_errors
from ..plans import A, Add, Delete, Item, Put, Remove, Set, Update, plan
from ..retention import retain_until
from ..rules import new_request
from .base import WritesBase, carries
from .items import REVISION

TABLE = "batches"


def batch_item(batch: BatchRecord, part: str, req: str) -> Item:
    """The item of a batch in partition ``part``."""
    return {"part": part, "batch_id": batch.batch_id, "operation": batch.operation,
            "selection": batch.selection.to_json(), "params": json.dumps(batch.params, separators=(",", ":")),
            "rate": batch.rate, "state": batch.state, "cursor": batch.cursor, "selected": batch.selected,
            "done": batch.done, "failed": batch.failed, "skipped": batch.skipped,
            "errors": json.dumps(batch.errors, separators=(",", ":")), "created_at": batch.created_at,
            "updated_at": batch.updated_at, "ended_at": batch.ended_at, "due_at": batch.due_at,
            "owner": batch.owner, REVISION: batch.revision, "req": req, "retain_until": batch.retain_until,
            "run_seconds": batch.run_seconds, "stalls": batch.stalls or None, "stalled": batch.stalled}


def batch_record(item: Item) -> BatchRecord:
    """The batch of a ``batches`` item."""
    def num(name: str) -> Any:
        value = item.get(name)
        return None if value is None else float(value)

    return BatchRecord(batch_id=item["batch_id"], operation=item["operation"],
                       selection=Selection.from_json(item["selection"]), params=json.loads(item.get("params") or "{}"),
                       rate=float(item["rate"]), state=item["state"], cursor=item.get("cursor"),
                       selected=int(item.get("selected") or 0), done=int(item.get("done") or 0),
                       failed=int(item.get("failed") or 0), skipped=int(item.get("skipped") or 0),
                       errors=json.loads(item.get("errors") or "[]"), created_at=float(item["created_at"]),
                       updated_at=float(item.get("updated_at") or item["created_at"]), ended_at=num("ended_at"),
                       due_at=num("due_at"), owner=item.get("owner"), revision=int(item.get(REVISION) or 0),
                       retain_until=num("retain_until"), run_seconds=num("run_seconds"),
                       stalls=int(item.get("stalls") or 0), stalled=item.get("stalled"))


class BatchWrites(WritesBase):
    """The batch items' writes and reads (see the BatchStore port)."""

    def create_batch(self, batch: BatchRecord) -> None:
        """Store a new live batch (its id is new: a retry of this request finds its own item)."""
        req = new_request()
        self.commit(plan("create batch", Put(TABLE, batch_item(batch, LIVE_PART, req), A("batch_id").missing()),
                         own=carries(TABLE, (LIVE_PART, batch.batch_id), req)))

    def get_batch(self, batch_id: str) -> BatchRecord | None:
        """A batch, live or ended (one BatchGet of both keys), or None."""
        found = self.batch_items("read batch", TABLE, [(LIVE_PART, batch_id), (ENDED_PART, batch_id)])
        item = found.get((LIVE_PART, batch_id)) or found.get((ENDED_PART, batch_id))
        return None if item is None else batch_record(item)

    def live_batches(self) -> list[BatchRecord]:
        """Every live batch (one Query of the live partition)."""
        return [batch_record(i) for i in self.query_items("read live batches", TABLE, LIVE_PART)]

    def newest_batches(self, limit: int, before: str | None = None) -> list[BatchRecord]:
        """Up to ``limit`` batches, live and ended, newest first (ids before ``before``, if given):
        one Query of each partition, newest first, whatever the number kept."""
        found = [batch_record(i) for part in (LIVE_PART, ENDED_PART)
                 for i in self.newest_items(f"read {part} batches", TABLE, part, limit, before)]
        return sorted(found, key=lambda b: b.batch_id, reverse=True)[:limit]

    def claim_batch(self, batch: BatchRecord, owner: str, lease_until: float) -> BatchRecord | None:
        """Take a live batch to drive it until ``lease_until``: only if it is still at the version
        read and its ``due_at`` has come. The batch as claimed, or None (someone else moved it)."""
        req = new_request()
        key = (LIVE_PART, batch.batch_id)
        cond = (A(REVISION) == batch.revision) & (A("due_at") <= self.now())
        committed = self.commit(plan("claim batch", Update(TABLE, key, (
            Set("owner", owner), Set("due_at", lease_until), Set(REVISION, batch.revision + 1), Set("req", req)),
            cond), own=carries(TABLE, key, req)))
        if not committed.applied:
            return None
        return _replace(batch, owner=owner, due_at=lease_until, revision=batch.revision + 1)

    def advance_batch(self, batch: BatchRecord, cursor: str | None, progress: Progress,
                      due_at: float) -> BatchRecord | None:
        """Record a chunk done by the batch's owner: its cursor, counts and failures, and when the
        next chunk may begin (the owner lets go). The batch after, or None if it moved meanwhile."""
        req, key, now = new_request(), (LIVE_PART, batch.batch_id), self.now()
        errors = kept_errors(batch.errors, progress.errors)
        actions = (Set("cursor", cursor), Add("selected", progress.selected), Add("done", progress.done),
                   Add("failed", progress.failed), Add("skipped", progress.skipped),
                   Set("errors", json.dumps(errors, separators=(",", ":"))), Set("updated_at", now),
                   Set("due_at", due_at), Remove("owner"), Set(REVISION, batch.revision + 1), Set("req", req),
                   Set("run_seconds", progress.run_seconds(batch.run_seconds)), Remove("stalls"), Remove("stalled"))
        committed = self.commit(plan("advance batch", Update(TABLE, key, actions, A(REVISION) == batch.revision),
                                     own=carries(TABLE, key, req)))
        if not committed.applied:
            return None
        return _replace(batch, cursor=cursor, selected=batch.selected + progress.selected,
                        done=batch.done + progress.done, failed=batch.failed + progress.failed,
                        skipped=batch.skipped + progress.skipped, errors=errors, updated_at=now, due_at=due_at,
                        owner=None, revision=batch.revision + 1, run_seconds=progress.run_seconds(batch.run_seconds),
                        stalls=0, stalled=None)

    def stall_batch(self, batch: BatchRecord, error: str, due_at: float) -> BatchRecord | None:
        """Record a chunk that failed for the store (its owner lets go): one more stall, its error, and
        when the next try may begin. The batch after, or None if it moved meanwhile."""
        req, key, now = new_request(), (LIVE_PART, batch.batch_id), self.now()
        actions = (Add("stalls", 1), Set("stalled", error), Set("updated_at", now), Set("due_at", due_at),
                   Remove("owner"), Set(REVISION, batch.revision + 1), Set("req", req))
        committed = self.commit(plan("stall batch", Update(TABLE, key, actions, A(REVISION) == batch.revision),
                                     own=carries(TABLE, key, req)))
        if not committed.applied:
            return None
        return _replace(batch, stalls=batch.stalls + 1, stalled=error, updated_at=now, due_at=due_at, owner=None,
                        revision=batch.revision + 1)

    def end_batch(self, batch: BatchRecord, state: str, progress: Progress = Progress()) -> BatchRecord | None:
        """End a live batch at the version read (its last chunk's ``progress`` counted): the live
        item deleted and the ended one put with its TTL, in one transaction. The batch as ended,
        or None if it moved meanwhile."""
        now = self.now()
        ended = _replace(batch, state=state, cursor=None, selected=batch.selected + progress.selected,
                         done=batch.done + progress.done, failed=batch.failed + progress.failed,
                         skipped=batch.skipped + progress.skipped, errors=kept_errors(batch.errors, progress.errors),
                         updated_at=now, ended_at=now, due_at=None, owner=None, revision=batch.revision + 1,
                         retain_until=retain_until(now, self.settings),
                         run_seconds=progress.run_seconds(batch.run_seconds))
        req = new_request()
        committed = self.commit(plan("end batch", Delete(TABLE, (LIVE_PART, batch.batch_id),
                                                         A(REVISION) == batch.revision),
                                     Put(TABLE, batch_item(ended, ENDED_PART, req)), token=req))
        return ended if committed.applied else None


def _replace(batch: BatchRecord, **changes: Any) -> BatchRecord:
    return dataclasses.replace(batch, **changes)
