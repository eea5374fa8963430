"""An in-memory Store with the observable behaviour of the DynamoDB store, request by request."""

from __future__ import annotations

import functools
import itertools
import json
import math
import time
from typing import Any, Callable

from ..core.hooks import refusal
from ..core.listing import Position, merged_page
from ..core.metering import Tally, flush
from ..core.records import (
    LIVE,
    RUN_RESULT_SEQ,
    TERMINAL,
    EventRecord,
    HookRecord,
    OpKind,
    Page,
    RunRecord,
    RunSummary,
    SignalRecord,
    TimerRecord,
    event_seq,
)
from ..core.retention import retain_until
from ..core.storage import (
    check_item_size,
    inline_payload_limit,
    inline_result_limit,
    new_request,
    refuse_taken_fence,
    shard_of,
    signal_time,
)
from ..errors import HookClosed, HookExpired, PayloadTooLarge, RunNotFound, StorageError
from ..settings import Settings
from .base import to_json
from .flow import FlowTables
from .joins import JoinTables
from .retention import RetentionTables
from .schedules import ScheduleTables
from .sessions import SessionTables
from .tables import (
    Change,
    Check,
    Index,
    Item,
    Put,
    Table,
    Update,
    Write,
    absent,
    actions,
    add,
    if_absent,
    present,
    remove,
    set_,
)
from .tags import TagTables
from .versions import VersionTables


def _live(item: Item) -> bool:
    return item.get("status") in LIVE


def _run_record(item: Item) -> RunRecord:
    return RunRecord(
        run_id=item["run_id"], workflow=item["workflow"], status=item["status"], created_at=item["created_at"],
        updated_at=item.get("updated_at") or item["created_at"], args=item.get("args") or "[[],{}]",
        ended_at=item.get("ended_at"), result=item.get("result"), error=item.get("error"),
        cursor=int(item.get("cursor", -1)), waiting=json.loads(item["waiting"]) if item.get("waiting") else None,
        wake_seq=int(item.get("wake_seq") or 0), lease_expires_at=item.get("lease_expires_at"),
        recoveries=int(item.get("recoveries") or 0), cancel_requested=bool(item.get("cancel_requested")),
        deadline=item.get("deadline"), idempotency_key=item.get("idempotency_key"),
        parent_run_id=item.get("parent_run_id"),
        parent_pos=None if item.get("parent_pos") is None else int(item["parent_pos"]),
        continued_from=item.get("continued_from"), continued_to=item.get("continued_to"),
        schedule_id=item.get("schedule_id"), fire_time=item.get("fire_time"),
        ddb_reads=int(item.get("ddb_reads") or 0), ddb_writes=int(item.get("ddb_writes") or 0),
        sqs_sends=int(item.get("sqs_sends") or 0),
        tags=json.loads(item["tags"]) if item.get("tags") else None, retain_until=item.get("retain_until"),
        code_version=item.get("code_version"), forked_from=item.get("forked_from"),
        forked_at=None if item.get("forked_at") is None else int(item["forked_at"]),
        chain_head=item.get("chain_head"), chain_last=item.get("chain_last"), priority=item.get("priority"),
        deferral=json.loads(item["deferral"]) if item.get("deferral") else None,
    )


def _count_changes(tally: Tally) -> list[Change]:
    """``ADD`` the requests counted for a run (none when nothing was counted)."""
    return [add(name, n) for name, n in (("ddb_reads", tally.ddb_reads), ("ddb_writes", tally.ddb_writes),
                                         ("sqs_sends", tally.sqs_sends)) if n]


def _event_record(item: Item) -> EventRecord:
    return EventRecord(run_id=item["run_id"], seq=int(item["seq"]), kind=item["kind"], status=item["status"],
                       at=item["at"], name=item.get("name"), data=item.get("data"), error=item.get("error"),
                       attempt=None if item.get("attempt") is None else int(item["attempt"]),
                       started_at=item.get("started_at"))


def _hook_record(item: Item) -> HookRecord:
    return HookRecord(token_hash=item["token_hash"], run_id=item["run_id"], pos=int(item["pos"]),
                      name=item["name"], status=item["status"], created_at=item["created_at"],
                      expires_at=item.get("expires_at"), schema=item.get("schema"), payload=item.get("payload"),
                      resumed_at=item.get("resumed_at"))


def _timer_record(item: Item) -> TimerRecord:
    return TimerRecord(timer_id=item["timer_id"], kind=item["kind"], run_id=item["run_id"], due_at=item["due_at"],
                       pos=None if item.get("pos") is None else int(item["pos"]), data=item.get("data"),
                       version=item.get("version"))


class MemoryStore(ScheduleTables, TagTables, RetentionTables, FlowTables, VersionTables, JoinTables, SessionTables):
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
        self.joins = Table("joins", "join_id", "slot")
        self.signal_items = Table("signals", "run_id", "signal_key")
        self.guards = Table("idempotency", "key")
        self.run_tags = Table("tags", "tag", "run_key")
        self._init_schedules()
        self._init_flow()

    def _timer_item(self, timer: TimerRecord) -> Item:
        check_item_size({"data": timer.data})
        return {"timer_id": timer.timer_id, "shard": shard_of(timer.timer_id, self.settings.index_shards),
                "due_at": timer.due_at, "kind": timer.kind, "run_id": timer.run_id, "pos": timer.pos,
                "data": timer.data, "version": new_request()}

    def _event_item(self, event: EventRecord) -> Item:
        check_item_size({"data": event.data, "error": event.error})
        return {"run_id": event.run_id, "seq": event.seq, "kind": event.kind, "name": event.name, "pos": event.pos,
                "status": event.status, "at": event.at or self.now(), "data": event.data, "error": event.error,
                "attempt": event.attempt, "started_at": event.started_at}

    # -- runs -----------------------------------------------------------------------------------------
    def create_run(self, run: RunRecord, *, timers: list[TimerRecord] = ()) -> tuple[str, bool]:  # type: ignore[assignment]
        """Store a new pending, leased run (with its idempotency guard and timers, in one transaction).

        Returns:
            ``(run_id, created)``: the existing run's id and False for a known key or id.

        Raises:
            PayloadTooLarge: the arguments are over ``inline_payload_bytes``.
        """
        size = len(run.args.encode())
        if size > inline_payload_limit(self.settings):  # a larger payload is a reference to the blob store
            raise PayloadTooLarge(f"arguments of run {run.run_id}", size, inline_payload_limit(self.settings))
        item = self._run_item(run)
        now, req = item["updated_at"], item["req"]
        own = self._carries("read run", self.runs, (run.run_id,), req)
        if run.idempotency_key is None and not timers and not run.tags:
            return run.run_id, self._write("create run", lambda: self.runs.put(item, absent("run_id")), own=own)
        ops: list[Write] = [Put(self.runs, item, absent("run_id"))]
        if run.idempotency_key is not None:
            guard = {"key": run.idempotency_key, "run_id": run.run_id, "created_at": now}
            ops.append(Put(self.guards, guard, absent("key")))
        ops += [Put(self.timers, self._timer_item(timer)) for timer in timers]
        ops += [Put(self.run_tags, item) for item in self._tag_items(run)]
        if self._transact("create run", ops, own=own):
            return run.run_id, True
        if run.idempotency_key is not None:
            existing = self.run_for_key(run.idempotency_key)
            if existing is not None:
                return existing, False
        return run.run_id, False

    def _run_item(self, run: RunRecord) -> Item:
        """The item of a new run: pending, leased (so a lost start is recovered)."""
        now = self.now()
        return {"run_id": run.run_id, "workflow": run.workflow, "status": "pending",
                "created_at": run.created_at or now, "updated_at": now, "args": run.args, "cursor": -1,
                "wake_seq": 0, "recoveries": 0, "cancel_requested": False,
                "lease_shard": shard_of(run.run_id, self.settings.index_shards), "lease_expires_at": self.lease_until(),
                "deadline": run.deadline, "idempotency_key": run.idempotency_key,
                "parent_run_id": run.parent_run_id, "parent_pos": run.parent_pos,
                "continued_from": run.continued_from, "schedule_id": run.schedule_id, "fire_time": run.fire_time,
                "code_version": run.code_version, "forked_from": run.forked_from, "forked_at": run.forked_at,
                "req": new_request(), "tags": to_json(run.tags) if run.tags else None, "chain_head": run.chain_head,
                "priority": run.priority}

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
        run = _run_record(item)
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
                  cursor: str | None = None, since: float | None = None,
                  until: float | None = None, tag: tuple[str, str] | None = None) -> Page[RunRecord]:
        """One page of runs, newest first, by status, workflow or tag (an index Query)."""
        if tag is not None:
            if status is not None:
                raise ValueError("list_runs by tag does not combine with status")
            return self._list_tagged(tag, workflow=workflow, limit=limit, cursor=cursor, since=since, until=until)
        items, next_cursor = self._index_page(status, workflow, limit, cursor, since, until)
        return Page(items=self.get_runs([item["run_id"] for item in items]), next_cursor=next_cursor)

    def list_run_summaries(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                           cursor: str | None = None, since: float | None = None,
                           until: float | None = None) -> Page[RunSummary]:
        """``list_runs`` from the index's projected fields alone: one Query a page."""
        items, next_cursor = self._index_page(status, workflow, limit, cursor, since, until)
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

    def advance_run(self, run_id: str, pos: int, waiting: dict[str, Any], *, recovering: bool = False) -> bool:
        """Mark op ``pos`` in flight and renew the lease; False if the run moved on, ended or must cancel."""
        def cond(item: Item) -> bool:
            cursor = item.get("cursor")
            return (cursor is not None and (cursor <= pos if recovering else cursor < pos) and _live(item)
                    and item.get("cancel_requested") is False)

        req = new_request()
        with flush(run_id) as counts:
            change = actions(set_("status", "running"), set_("cursor", pos), set_("waiting", to_json(waiting)),
                             set_("lease_expires_at", self.lease_until()), set_("updated_at", self.now()),
                             set_("req", req), remove("owner"), *_count_changes(counts.tally))
            counts.applied = self._write("advance run", lambda: self.runs.update((run_id,), change, cond),
                                         own=self._carries("read run", self.runs, (run_id,), req))
        return counts.applied

    def suspend_run(self, run_id: str, pos: int, waiting: dict[str, Any], seen_wake: int,
                    timers: list[TimerRecord] = ()) -> bool:  # type: ignore[assignment]
        """Suspend at ``pos`` (lease removed) and store the timers, in one transaction.

        Returns False if anything woke the run since ``seen_wake`` was read, or it ended.
        """
        def cond(item: Item) -> bool:
            return item.get("wake_seq") == seen_wake and _live(item) and item.get("cursor", math.inf) <= pos

        with flush(run_id) as counts:
            change = actions(set_("status", "suspended"), set_("cursor", pos), set_("waiting", to_json(waiting)),
                             remove("lease_expires_at"), remove("owner"), set_("updated_at", self.now()),
                             *_count_changes(counts.tally))
            ops: list[Write] = [Update(self.runs, (run_id,), change, cond)]
            ops += [Put(self.timers, self._timer_item(timer)) for timer in timers]
            counts.applied = self._transact("suspend run", ops)
        return counts.applied

    def wake_run(self, run_id: str, *, cancel: bool = False) -> RunRecord | None:
        """Bump ``wake_seq`` and lease a leaseless run (optionally request cancel).

        Returns the run after the update, or None if it does not exist or has ended.
        """
        with flush(run_id) as counts:
            change = actions(self._wake_change(), *([set_("cancel_requested", True)] if cancel else []),
                             *_count_changes(counts.tally))
            after = self._update("wake run", self.runs, (run_id,), change, _live)
            counts.applied = after is not None
        return None if after is None else _run_record(after)

    def claim_run(self, run_id: str, pos: int, owner: str, waiting: dict[str, Any]) -> bool:
        """Make resume ``owner`` the one executor of the run's inline steps from ``pos`` on."""
        now = self.now()

        def cond(item: Item) -> bool:
            free = item.get("owner") in (None, owner) or item.get("lease_expires_at", math.inf) < now
            return (item.get("cursor", math.inf) <= pos and _live(item) and item.get("cancel_requested") is False
                    and free)

        own = lambda: (self._request("read run", lambda: self.runs.get(run_id)) or {}).get("owner") == owner  # noqa: E731
        with flush(run_id) as counts:
            change = actions(set_("status", "running"), set_("cursor", pos), set_("owner", owner),
                             set_("waiting", to_json(waiting)), set_("lease_expires_at", self.lease_until()),
                             set_("updated_at", now), *_count_changes(counts.tally))
            counts.applied = self._write("claim run", lambda: self.runs.update((run_id,), change, cond), own=own)
        return counts.applied

    def _wake_change(self) -> Any:
        """``ADD wake_seq 1`` and a short lease if the run has none."""
        return actions(add("wake_seq", 1),
                       if_absent("lease_expires_at", self.lease_until(min(self.settings.lease_seconds, 30.0))))

    def renew_lease(self, run_id: str, pos: int | None = None) -> bool:
        """Extend the lease of a live run (whose cursor is ``pos``, if given)."""
        def cond(item: Item) -> bool:
            return (_live(item) and item.get("cancel_requested") is not True
                    and (pos is None or item.get("cursor") == pos))

        change = set_("lease_expires_at", self.lease_until())
        return self._write("renew lease", lambda: self.runs.update((run_id,), change, cond))

    def finish_run(self, run_id: str, status: str, *, result: str | None = None, error: str | None = None,
                   continued_to: str | None = None, wake: str | None = None,
                   owner: str | None = None, fence: int | None = None,
                   wake_record: EventRecord | None = None) -> RunRecord | None:
        """End a live run; exactly one caller wins (a retry of the winning request too).
        ``wake``: a run woken in the same transaction, unless it has ended, and ``wake_record``
        written into its history there; ``fence``: an op position whose outcome slot the end
        takes. Returns the ended run, or None."""
        with flush(run_id) as counts:
            ended = self._finish_run(run_id, status, result, error, continued_to, (wake, wake_record), owner, fence,
                                     _count_changes(counts.tally))
            counts.applied = ended is not None
        return ended

    def _finish_run(self, run_id: str, status: str, result: str | None, error: str | None,
                    continued_to: str | None, waking: tuple[str | None, EventRecord | None], owner: str | None,
                    fence: int | None, counted: list[Change]) -> RunRecord | None:
        check_item_size({"result": result})
        wake, wake_record = waking
        outside = result is not None and len(result.encode()) > inline_result_limit(self.settings)
        change, req = self._end_change(status, None if outside else result, error, continued_to, run_id)
        change = actions(change, *counted)
        if outside:
            change = actions(change, set_("result_in_history", True))
        own = self._carries("read run", self.runs, (run_id,), req)
        now = self.now()

        def endable(item: Item) -> bool:  # live, and not claimed by another resume with a live lease
            return _live(item) and (item.get("owner") in (None, owner) or item.get("lease_expires_at", math.inf) < now)

        kept: list[Write] = []
        if outside:
            kept = [Put(self.events, {"run_id": run_id, "seq": RUN_RESULT_SEQ, "kind": "run", "status": status,
                                      "at": self.now(), "data": result})]
        if fence is not None:
            kept.append(Put(self.events, {"run_id": run_id, "seq": event_seq(fence), "kind": OpKind.END.value,
                                          "status": status, "at": now}, absent("seq")))
        if wake is not None:
            ops: list[Write] = [Update(self.runs, (run_id,), change, endable),
                                Update(self.runs, (wake,), self._wake_change(), _live), *kept]
            if wake_record is not None:
                ops.append(Put(self.events, self._event_item(wake_record)))
            if self._transact("finish run", ops, own=own):
                return self.find_run(run_id)
            run = self.find_run(run_id)
            if run is None or run.is_terminal:
                return None  # it had ended (our own retried end was recognised above)
        if kept:
            if self._transact("finish run", [Update(self.runs, (run_id,), change, endable), *kept], own=own):
                return self.find_run(run_id)
            refuse_taken_fence(self, run_id, fence)
            return None
        # One UpdateItem returning the item after it, as the DynamoDB store's update does: no read.
        after = self._update("finish run", self.runs, (run_id,), change, endable)
        if after is not None:
            return _run_record(after)
        return self.find_run(run_id) if own() else None

    def continue_run(self, run_id: str, successor: RunRecord, timers: list[TimerRecord] = ()  # type: ignore[assignment]
                     ) -> RunRecord | None:
        """End a live run as ``continued`` and create its successor with its timers, in one
        transaction; None if the run had ended."""
        check_item_size({"args": successor.args})
        head = successor.chain_head
        change, req = self._end_change("continued", None, None, successor.run_id, run_id, anchor=head == run_id)
        with flush(run_id) as counts:
            ops: list[Write] = [Update(self.runs, (run_id,), actions(change, *_count_changes(counts.tally)), _live),
                                Put(self.runs, self._run_item(successor), absent("run_id"))]
            if head is not None and head != run_id:  # the anchor names the chain's latest run
                ops.append(Update(self.runs, (head,), set_("chain_last", successor.run_id), present("run_id")))
            ops += [Put(self.timers, self._timer_item(timer)) for timer in timers]
            ops += [Put(self.run_tags, item) for item in self._tag_items(successor)]
            counts.applied = self._transact("continue run", ops,
                                            own=self._carries("read run", self.runs, (run_id,), req))
        return self.find_run(run_id) if counts.applied else None

    def _end_change(self, status: str, result: str | None, error: str | None,
                    continued_to: str | None, run_id: str, *, anchor: bool = False) -> tuple[Any, str]:
        """The end's changes; ``anchor``: the run continues as new as its chain's anchor (kept: no TTL)."""
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        check_item_size({"result": result, "error": error})
        now, req = self.now(), new_request()
        changes = [set_("status", status), set_("ended_at", now), set_("updated_at", now), remove("lease_expires_at"),
                   set_("req", req)]
        until = retain_until(now, self.settings)
        if anchor:
            changes.append(set_("chain_last", continued_to))
        elif until is not None:  # the run's TTL, and the retention index that stamps its other items
            changes += [set_("retain_until", until), set_("retain_shard", shard_of(run_id, self.settings.index_shards))]
        if result is not None:
            changes.append(set_("result", result))
        if error is not None:
            changes.append(set_("error", error[:4000]))
        if continued_to is not None:
            changes.append(set_("continued_to", continued_to))
        return actions(*changes), req

    def stale_runs(self, limit: int = 100) -> list[str]:
        """Live runs whose lease has expired (the sparse lease index, shard by shard)."""
        now = self.now()
        items = self._read_shards(self.settings.index_shards, limit, lambda shard: self._pages(
            "query stale leases", self.runs, shard, index="by_lease", where=lambda at: at < now))
        return [item["run_id"] for item in items]

    def claim_recovery(self, run_id: str) -> RunRecord | None:
        """Take over an expired lease (one claimer wins) and count the recovery."""
        now, lease = self.now(), self.lease_until()

        def cond(item: Item) -> bool:
            return "lease_expires_at" in item and item["lease_expires_at"] < now and _live(item)

        req = new_request()
        after = self._update("claim recovery", self.runs, (run_id,),
                             actions(add("recoveries", 1), set_("lease_expires_at", lease), set_("req", req),
                                     remove("owner")), cond)
        if after is None:
            run = self.find_run(run_id)  # a retry of our own claim (its response lost) still wins
            return run if run is not None and self._carries("read run", self.runs, (run_id,), req)() else None
        return _run_record(after)

    # -- history --------------------------------------------------------------------------------------
    def record_event(self, event: EventRecord) -> bool:
        """Append a record unless its key is taken; True if this call wrote it."""
        item = {**self._event_item(event), "req": new_request()}
        return self._write("record event", lambda: self.events.put(item, absent("seq")),
                           own=self._carries("read event", self.events, (event.run_id, event.seq), item["req"]))

    def record_outcome(self, run_id: str, pos: int, kind: str, status: str, *, name: str | None = None,
                       data: str | None = None, error: str | None = None, attempt: int | None = None,
                       started_at: float | None = None) -> bool:
        """Record op ``pos``'s outcome once; False if one was recorded already."""
        return self.record_event(EventRecord(run_id=run_id, seq=event_seq(pos), kind=kind, status=status,
                                             at=self.now(), name=name, data=data, error=error, attempt=attempt,
                                             started_at=started_at))

    def record_event_while_live(self, event: EventRecord) -> bool:
        """Append a record once, only while its run is live (one transaction)."""
        ops: list[Write] = [Put(self.events, self._event_item(event), absent("seq")),
                            Check(self.runs, (event.run_id,), _live)]
        return self._transact("record event", ops)

    def get_outcome(self, run_id: str, pos: int) -> EventRecord | None:
        """The recorded outcome of op ``pos``."""
        item = self._request("read event", lambda: self.events.get(run_id, event_seq(pos)))
        return None if item is None else _event_record(item)

    def get_event(self, run_id: str, seq: int) -> EventRecord | None:
        """The history record at ``seq``, or None."""
        item = self._request("read event", lambda: self.events.get(run_id, seq))
        return None if item is None else _event_record(item)

    def read_history(self, run_id: str, after_seq: int = -1, page_size: int | None = None,
                     until_seq: int | None = None) -> list[EventRecord]:
        """The records after ``after_seq`` (up to ``until_seq``), in order (paged Query)."""
        def where(seq: int) -> bool:
            return seq > after_seq and (until_seq is None or seq <= until_seq)

        return [_event_record(item) for item in self._pages("read history", self.events, run_id, where=where,
                                                            limit=page_size)]

    def record_attempt(self, event: EventRecord, while_live: str | None = None) -> bool:
        """Write a failed-attempt record unless its slot holds this attempt or a later one
        (attempts past 998 share the last slot, which keeps the latest), only while run
        ``while_live`` (if given) is live. True if written."""
        if event.attempt is None:
            raise ValueError("an attempt record needs its attempt number")
        item = {**self._event_item(event), "req": new_request()}
        attempt = event.attempt

        def latest(current: Item) -> bool:
            return "seq" not in current or (current.get("attempt") or 0) < attempt

        own = self._carries("read event", self.events, (event.run_id, event.seq), item["req"])
        if while_live is None:
            return self._write("record attempt", lambda: self.events.put(item, latest), own=own)
        ops: list[Write] = [Put(self.events, item, latest), Check(self.runs, (while_live,), _live)]
        return self._transact("record attempt", ops, own=own)

    def schedule_retry(self, retry: TimerRecord, backoff: float) -> bool:
        """Store a retry timer and extend the lease over the backoff (one transaction); False
        if the run has ended."""
        lease = self.lease_until(backoff + self.settings.lease_seconds)
        return self._transact("schedule retry", [Put(self.timers, self._timer_item(retry)),
                                                 Update(self.runs, (retry.run_id,), set_("lease_expires_at", lease),
                                                        _live)])

    # -- timers ---------------------------------------------------------------------------------------
    def put_timer(self, timer: TimerRecord) -> None:
        """Store or replace a timer."""
        item = self._timer_item(timer)
        self._request("put timer", lambda: self.timers.put(item))

    def due_timers(self, limit: int = 500, page_size: int | None = None) -> list[TimerRecord]:
        """Timers due now (``due_at <= now``), shard by shard."""
        now = self.now()
        items = self._read_shards(self.settings.index_shards, limit, lambda shard: self._pages(
            "query due timers", self.timers, shard, index="by_due", where=lambda at: at <= now, limit=page_size))
        return [_timer_record(item) for item in items]

    def next_due_at(self, *, schedules: bool = True) -> float | None:
        """The earliest due time of any timer (and, with ``schedules``, of any schedule in
        the due index), or None. Not a DynamoDB request: the testing kit asks it to know
        how far it may skip the clock."""
        with self._lock:
            dues = [item["due_at"] for item in self.timers.items.values()]
            if schedules:
                dues += [item["due_at"] for item in self.schedules.items.values()
                         if item.get("active_shard") is not None and item.get("due_at") is not None]
        return min(dues, default=None)

    def claim_timer(self, timer_id: str, version: str | None = None) -> bool:
        """Take the firing of a timer for a lease (version ``version``, if given): True for
        the one caller that took it (a retry of its own lost request too)."""
        now, req = self.now(), new_request()

        def cond(item: Item) -> bool:
            return ("timer_id" in item and (version is None or item.get("version") == version)
                    and item.get("claimed_at", -math.inf) < now - self.settings.lease_seconds)

        change = actions(set_("claimed_at", now), set_("req", req))
        return self._write("claim timer", lambda: self.timers.update((timer_id,), change, cond),
                           own=self._carries("read timer", self.timers, (timer_id,), req))

    def delete_timer(self, timer_id: str, version: str | None = None) -> None:
        """Delete a timer; a missing one is fine. ``version``: only that write of it."""
        if version is None:
            self._request("delete timer", lambda: self.timers.delete((timer_id,)))
            return
        self._write("delete timer", lambda: self.timers.delete(
            (timer_id,), lambda item: "timer_id" not in item or item.get("version") == version))

    # -- hooks ----------------------------------------------------------------------------------------
    def create_hook(self, hook: HookRecord, timer: TimerRecord | None, run_id: str, pos: int,
                    data: str) -> EventRecord | None:
        """Store the hook, its expiry timer and the op's outcome in one transaction while the
        run is live; return the recorded outcome (this call's, or a concurrent replay's),
        or None if the run has ended."""
        event = EventRecord(run_id=run_id, seq=event_seq(pos), kind="hook", status="created", at=self.now(),
                            name=hook.name, data=data)
        item = {"token_hash": hook.token_hash, "run_id": hook.run_id, "pos": hook.pos, "name": hook.name,
                "status": hook.status, "created_at": hook.created_at, "expires_at": hook.expires_at,
                "schema": hook.schema}
        ops: list[Write] = [Put(self.hooks, item, absent("token_hash"))]
        if timer is not None:
            ops.append(Put(self.timers, self._timer_item(timer)))
        ops += [Put(self.events, self._event_item(event), absent("seq")), Check(self.runs, (run_id,), _live)]
        if self._transact("create hook", ops):
            return event
        existing = self.get_outcome(run_id, pos)
        if existing is None:
            run = self.find_run(run_id)
            if run is None or run.is_terminal:
                return None
            raise StorageError(f"hook of run {run_id} at {pos} could not be created")
        return existing

    def get_hook(self, token_hash: str) -> HookRecord | None:
        """The hook with this token hash."""
        item = self._request("read hook", lambda: self.hooks.get(token_hash))
        return None if item is None else _hook_record(item)

    def resume_hook(self, token_hash: str, payload: str) -> HookRecord:
        """Resume a pending, unexpired hook exactly once.

        Raises:
            HookNotFound, HookExpired, HookClosed, HookAlreadyResumed: why it was refused.
        """
        check_item_size({"payload": payload})
        now = self.now()

        def cond(item: Item) -> bool:
            return ("token_hash" in item and item.get("status") == "pending"
                    and ("expires_at" not in item or item["expires_at"] > now))

        hook = self.get_hook(token_hash)
        refused = refusal(hook, now)
        if refused is not None or hook is None:
            raise refused or HookExpired("hook expired")
        req = new_request()
        change = actions(set_("status", "resumed"), set_("payload", payload), set_("resumed_at", now), set_("req", req))
        ops: list[Write] = [Update(self.hooks, (token_hash,), change, cond),
                            Update(self.runs, (hook.run_id,), self._wake_change(), _live)]
        if self._transact("resume hook", ops, own=self._carries("read hook", self.hooks, (token_hash,), req)):
            after = self.get_hook(token_hash)
            assert after is not None
            return after
        after = self.get_hook(token_hash)
        if after is not None and after.status == "pending" and not refusal(after, now):
            raise HookClosed(f"the run of hook {hook.name!r} has ended")
        raise refusal(after, now) or HookExpired("hook expired")

    def expire_hook(self, token_hash: str) -> bool:
        """Mark a pending hook expired; False if it was resumed or closed first."""
        req = new_request()
        own = self._carries("read hook", self.hooks, (token_hash,), req)
        return self._write("expire hook", lambda: self.hooks.update(
            (token_hash,), actions(set_("status", "expired"), set_("req", req)),
            lambda item: item.get("status") == "pending"), own=own)

    def hooks_for_run(self, run_id: str) -> list[HookRecord]:
        """A run's hooks in op order (index Query, then BatchGet)."""
        keys = [(item["token_hash"],) for item in self._pages("list hooks", self.hooks, run_id, index="by_run")]
        found = self._batch_get("read hooks", self.hooks, keys) if keys else {}
        return sorted((_hook_record(item) for item in found.values()), key=lambda h: h.pos)

    def close_hooks(self, run_id: str) -> int:
        """Close every pending hook of an ended run; return how many."""
        closed = 0
        for hook in self.hooks_for_run(run_id):
            if hook.status == "pending" and self._write("close hook", functools.partial(
                    self.hooks.update, (hook.token_hash,), set_("status", "closed"),
                    lambda item: item.get("status") == "pending")):
                closed += 1
        return closed

    # -- signals --------------------------------------------------------------------------------------
    def put_signal(self, run_id: str, name: str, payload: str, *, wake: str | None = None) -> SignalRecord | None:
        """Store a signal under ``run_id`` after every earlier one of its name and wake run ``wake``
        (default ``run_id``), in one transaction; None (nothing stored) if that run has ended or
        does not exist, or if a signal ordered after this one was stored since the anchor's
        ``signal_clock`` was read (see ``core.storage.signal_time``)."""
        check_item_size({"payload": payload})
        anchor = self._request("read run", lambda: self.runs.get(run_id)) or {}
        at = signal_time(self.now(), anchor.get("signal_clock"))
        key = f"{name}#{at:020d}#{next(self._signal_serial):08x}"
        record = SignalRecord(run_id=run_id, signal_key=key, name=name, payload=payload, sent_at=self.now())
        item = {"run_id": run_id, "signal_key": key, "name": name, "payload": payload, "sent_at": record.sent_at}

        def ahead(item: Item) -> bool:  # the anchor exists and no signal after ``at`` was stored meanwhile
            return bool(item) and int(item.get("signal_clock") or 0) <= at

        tick = set_("signal_clock", at)
        if (wake or run_id) == run_id:  # one update of the anchor (a transaction touches an item once)
            ops: list[Write] = [Put(self.signal_items, item), Update(
                self.runs, (run_id,), actions(self._wake_change(), tick), lambda i: _live(i) and ahead(i))]
        else:
            ops = [Put(self.signal_items, item), Update(self.runs, (run_id,), tick, ahead),
                   Update(self.runs, (wake or run_id,), self._wake_change(), _live)]
        return record if self._transact("put signal", ops) else None

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
        return [SignalRecord(run_id=i["run_id"], signal_key=i["signal_key"], name=i["name"], payload=i.get("payload"),
                             sent_at=i["sent_at"])
                for i in self._pages("read signals", self.signal_items, run_id,
                                     where=lambda key: key.startswith(f"{name}#"))]
