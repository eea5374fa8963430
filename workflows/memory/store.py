"""An in-memory Store with the observable behaviour of the DynamoDB store, request by request."""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable

from ..core.model.records import (
    ANY_TIME,
    RUN_RESULT_SEQ,
    EventRecord,
    HookRecord,
    Page,
    RunRecord,
    RunSummary,
    SignalRecord,
    TimeRange,
    TimerRecord,
    event_seq,
)
from ..core.storage.listing import Position, merged_page
from ..core.storage.writes import Writes
from ..core.storage.writes.items import event_record, hook_record, run_record, signal_record, timer_record
from ..errors import RunNotFound
from ..settings import Settings
from .plans import PlanTables
from .retention import RetentionTables
from .schedules import ScheduleTables
from .tables import (
    Index,
    Item,
    Table,
)
from .tags import TagTables
from .versions import VersionTables


class MemoryStore(ScheduleTables, TagTables, RetentionTables, VersionTables, PlanTables, Writes):
    """The whole Store protocol in memory, behaving as :class:`persistence.DynamoStore` does.

    Each DynamoDB request the DynamoDB store would make (a GetItem, a conditional
    Put/Update/DeleteItem, a TransactWriteItems, one Query page, one BatchGetItem
    of up to 100 keys) is one call of :meth:`_request`, in the same order. Its
    ``apply`` performs that request atomically (under the store's lock) and may
    be called again with the same effect a resent request would have: values
    such as timestamps and tokens are computed before it.

    Faults are injected through ``interceptor`` (None: every request applies).
    It is called as ``interceptor(name, apply)`` and returns what the request
    returns, for example:

    * raise ``Throttled`` (or any error) without calling ``apply``: the request
      failed before reaching the table;
    * call ``apply()`` then raise: the write happened but the caller saw a crash;
    * call ``apply()`` twice and return the second result: a response was lost
      and the SDK sent the request again. A conditional write then fails its
      condition (the store reports False), as in DynamoDB; a transaction carries
      a client request token and succeeds without applying twice.

    ``apply`` raises :class:`~workflows.memory.tables.ConditionFailed` when a
    write's condition does not hold, and ``StorageError`` for a request DynamoDB
    would refuse (such as an item over 400 KB).

    Args:
        settings: the deployment settings (lease length).
        clock: a callable returning epoch seconds, or an object with ``now()``
            such as :class:`~workflows.memory.ManualClock`.
    """

    def __init__(self, settings: Settings, clock: Callable[[], float] | Any = time.time) -> None:
        super().__init__(settings, clock)
        self._signal_serial = itertools.count(1)  # shared by every view of these tables
        self.runs = Table("runs", "run_id", indexes={
            "by_status": Index("status", "created_at"), "by_workflow": Index("workflow", "created_at"),
            "by_lease": Index("lease_shard", "lease_expires_at"), "by_retention": Index("retain_shard", "ended_at")})
        self.events = Table("history", "run_id", "seq")
        self.hooks = Table("hooks", "token_hash", indexes={"by_run": Index("run_id", "pos")})
        self.timers = Table("timers", "timer_id", indexes={"by_due": Index("shard", "due_at")})
        self.joins = Table("joins", "join_id", "slot")  # items keep the stored names: a join's entry is "slot"
        self.signal_items = Table("signals", "run_id", "signal_key")
        self.guards = Table("idempotency", "key")
        self.run_tags = Table("tags", "tag", "run_key")
        self._init_schedules()
        self.flow = Table("flow", "limit_id", "slot")  # a flow item's slot number, stored as "slot"
        self.batches = Table("batches", "part", "batch_id")

    # -- runs -----------------------------------------------------------------------------------------
    def run_for_key(self, key: str) -> str | None:
        """The run id an idempotency key maps to, if any."""
        guard = self._request("read idempotency key", lambda: self.guards.get(key))
        return None if guard is None else str(guard["run_id"])

    def get_run(self, run_id: str) -> RunRecord:
        """A run (consistent read). Raises RunNotFound."""
        item = self._request("read run", lambda: self.runs.get(run_id))
        if item is None:
            raise RunNotFound(run_id)
        return self._with_result(item)

    def _with_result(self, item: Item) -> RunRecord:
        """The run of ``item``, its result read from history if it is kept there (see finish_run)."""
        run = run_record(item)
        if item.get("result_in_history"):
            kept = self._request("read run result", lambda: self.events.get(run.run_id, RUN_RESULT_SEQ))
            run.result = None if kept is None else kept.get("data")
        return run

    def find_run(self, run_id: str) -> RunRecord | None:
        """A run, or None."""
        try:
            return self.get_run(run_id)
        except RunNotFound:
            return None

    def get_runs(self, run_ids: list[str]) -> list[RunRecord]:
        """The runs that exist among ``run_ids``, in that order (BatchGet)."""
        if not run_ids:
            return []
        found = self._batch_get("read runs", self.runs, [(r,) for r in run_ids])
        return [self._with_result(found[(r,)]) for r in run_ids if (r,) in found]

    def list_runs(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                  cursor: str | None = None, created: TimeRange = ANY_TIME,
                  tag: tuple[str, str] | None = None) -> Page[RunRecord]:
        """One page of runs, newest first, by status, workflow or tag (an index Query)."""
        if tag is not None:
            if status is not None:
                raise ValueError("list_runs by tag does not combine with status")
            return self._list_tagged(tag, workflow=workflow, limit=limit, cursor=cursor, since=created.since,
                                     until=created.until)
        items, next_cursor = self._index_page(status, workflow, limit, cursor, created.since, created.until)
        return Page(items=self.get_runs([item["run_id"] for item in items]), next_cursor=next_cursor)

    def list_run_summaries(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                           cursor: str | None = None, created: TimeRange = ANY_TIME) -> Page[RunSummary]:
        """``list_runs`` from the index's projected fields alone: one Query a page."""
        items, next_cursor = self._index_page(status, workflow, limit, cursor, created.since, created.until)
        return Page(items=[RunSummary(item["run_id"], item["workflow"], item["status"], item["created_at"],
                                      item.get("ended_at"), item.get("parent_run_id"), item.get("schedule_id"))
                           for item in items], next_cursor=next_cursor)

    def _index_page(self, status: str | None, workflow: str | None, limit: int, cursor: str | None,
                    since: float | None, until: float | None) -> tuple[list[Item], str | None]:
        """One page of a listing index's items, newest first, and the cursor of the next: one
        partition per key here, paged and with cursors as the DynamoDB store's shards are."""
        if status is None and workflow is None:
            raise ValueError("list_runs needs status= or workflow=")
        by_status = status is not None
        (index, name), key = (("by_status", "status"), status) if by_status else (("by_workflow", "workflow"), workflow)
        lo, hi = since if since is not None else 0, until if until is not None else 1e12
        only = (lambda item: item.get("workflow") == workflow) if by_status and workflow is not None else None

        def query(shard: int, after: Position | None, count: int) -> tuple[list[Item], bool]:
            start = None if after is None else {name: key, "created_at": after[0], "run_id": after[1]}
            items, last = self._limited("list runs", self.runs, key, count, start, index=index,
                                        where=lambda at: lo <= at <= hi, forward=False, filter=only)
            return items, last is not None

        return merged_page(name, 1, limit, cursor, query, lambda item: (item["created_at"], item["run_id"]))

    def count_runs(self, status: str, *, since: float | None = None, until: float | None = None,
                   cap: int = 10_000) -> tuple[int, bool]:
        """How many runs have ``status`` (created within the bounds), counting at most ``cap``."""
        lo, hi = since if since is not None else 0, until if until is not None else 1e12
        items, _ = self._limited("count runs", self.runs, status, cap + 1, None, index="by_status",
                                 where=lambda at: lo <= at <= hi, forward=False)
        return min(len(items), cap), len(items) > cap

    def stale_runs(self, limit: int = 100) -> list[str]:
        """Live runs whose lease has expired (the sparse lease index, shard by shard)."""
        now = self.now()
        items = self._read_shards(self.settings.index_shards, limit, lambda shard: self._pages(
            "query stale leases", self.runs, shard, index="by_lease", where=lambda at: at < now))
        return [item["run_id"] for item in items]

    # -- history --------------------------------------------------------------------------------------
    def get_outcome(self, run_id: str, pos: int) -> EventRecord | None:
        """The recorded outcome of op ``pos``."""
        item = self._request("read event", lambda: self.events.get(run_id, event_seq(pos)))
        return None if item is None else event_record(item)

    def get_event(self, run_id: str, seq: int) -> EventRecord | None:
        """The history record at ``seq``, or None."""
        item = self._request("read event", lambda: self.events.get(run_id, seq))
        return None if item is None else event_record(item)

    def read_history(self, run_id: str, after_seq: int = -1, page_size: int | None = None,
                     until_seq: int | None = None) -> list[EventRecord]:
        """The records after ``after_seq`` (up to ``until_seq``), in order (paged Query)."""
        def where(seq: int) -> bool:
            return seq > after_seq and (until_seq is None or seq <= until_seq)

        return [event_record(item) for item in self._pages("read history", self.events, run_id, where=where,
                                                            limit=page_size)]

    # -- timers ---------------------------------------------------------------------------------------
    def due_timers(self, limit: int = 500, page_size: int | None = None) -> list[TimerRecord]:
        """Timers due now (``due_at <= now``), shard by shard."""
        now = self.now()
        items = self._read_shards(self.settings.index_shards, limit, lambda shard: self._pages(
            "query due timers", self.timers, shard, index="by_due", where=lambda at: at <= now, limit=page_size))
        return [timer_record(item) for item in items]

    def next_due_at(self, *, schedules: bool = True) -> float | None:
        """The earliest due time of any timer or live batch (and, with ``schedules``, of any
        schedule in the due index), or None. Not a DynamoDB request: the testing kit asks it to know
        how far it may skip the clock."""
        with self._lock:
            dues = [item["due_at"] for item in self.timers.items.values()]
            dues += [item["due_at"] for item in self.batches.items.values() if item.get("due_at") is not None]
            if schedules:
                dues += [item["due_at"] for item in self.schedules.items.values()
                         if item.get("active_shard") is not None and item.get("due_at") is not None]
        return min(dues, default=None)

    # -- hooks ----------------------------------------------------------------------------------------
    def get_hook(self, token_hash: str) -> HookRecord | None:
        """The hook with this token hash."""
        item = self._request("read hook", lambda: self.hooks.get(token_hash))
        return None if item is None else hook_record(item)

    def hooks_for_run(self, run_id: str) -> list[HookRecord]:
        """A run's hooks in op order (index Query, then BatchGet)."""
        keys = [(item["token_hash"],) for item in self._pages("list hooks", self.hooks, run_id, index="by_run")]
        found = self._batch_get("read hooks", self.hooks, keys) if keys else {}
        return sorted((hook_record(item) for item in found.values()), key=lambda h: h.pos)

    # -- signals --------------------------------------------------------------------------------------
    def signal_nonce(self) -> str:
        """A serial number (the same on every run of a simulation seed)."""
        return f"{next(self._signal_serial):08x}"

    def delete_signals(self, run_id: str, keys: list[str]) -> None:
        """Delete signals of ``run_id`` by key, 25 a request (BatchWriteItem); missing ones are fine."""
        for start in range(0, len(keys), 25):
            batch = keys[start:start + 25]

            def apply(batch: list[str] = batch) -> None:
                for key in batch:
                    self.signal_items.delete((run_id, key))

            self._request("delete signals", apply)

    def signals(self, run_id: str, name: str) -> list[SignalRecord]:
        """The signals of ``name`` sent to a run, oldest first."""
        return [signal_record(i) for i in self._pages("read signals", self.signal_items, run_id,
                                                      where=lambda key: key.startswith(f"{name}#"))]

    def stored_signals(self, run_id: str) -> list[SignalRecord]:
        """Every signal and update request stored under a run, in key order."""
        return [signal_record(i) for i in self._pages("read signals", self.signal_items, run_id)]
