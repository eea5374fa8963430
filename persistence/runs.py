"""Runs: creation with idempotency guards, leases, suspension, wake-ups, endings."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, cast

from pynamodb.exceptions import DoesNotExist

from workflows.core.listing import listing_key
from workflows.core.metering import Tally, flush
from workflows.core.records import (
    RUN_RESULT_SEQ,
    TERMINAL,
    EventRecord,
    OpKind,
    Page,
    RunRecord,
    RunSummary,
    TimerRecord,
    event_seq,
)
from workflows.core.storage import inline_payload_limit, inline_result_limit, refuse_taken_fence
from workflows.errors import PayloadTooLarge, RunNotFound, SerializationError

from .base import LIVE_STATUSES, check_item_size, new_request, shard_of, to_json
from .listing import ListingStore

if TYPE_CHECKING:
    from workflows.core.ports import Store


def _run_record(item: Any) -> RunRecord:
    return RunRecord(
        run_id=item.run_id, workflow=item.workflow, status=item.status, created_at=item.created_at,
        updated_at=item.updated_at or item.created_at, args=item.args or "[[],{}]", ended_at=item.ended_at,
        result=item.result, error=item.error, cursor=int(item.cursor if item.cursor is not None else -1),
        waiting=json.loads(item.waiting) if item.waiting else None, wake_seq=int(item.wake_seq or 0),
        lease_expires_at=item.lease_expires_at, recoveries=int(item.recoveries or 0),
        cancel_requested=bool(item.cancel_requested), deadline=item.deadline,
        idempotency_key=item.idempotency_key, parent_run_id=item.parent_run_id,
        parent_pos=None if item.parent_pos is None else int(item.parent_pos),
        continued_from=item.continued_from, continued_to=item.continued_to,
        schedule_id=item.schedule_id, fire_time=item.fire_time, ddb_reads=int(item.ddb_reads or 0),
        ddb_writes=int(item.ddb_writes or 0), sqs_sends=int(item.sqs_sends or 0), code_version=item.code_version,
        forked_from=item.forked_from, forked_at=None if item.forked_at is None else int(item.forked_at),
        tags=json.loads(item.tags) if item.tags else None,
        retain_until=None if item.retain_until is None else item.retain_until.timestamp(),
        chain_head=item.chain_head, chain_last=item.chain_last, priority=item.priority,
        deferral=json.loads(item.deferral) if item.deferral else None,
    )


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

    def create_run(self, run: RunRecord, *, timers: list[TimerRecord] = ()) -> tuple[str, bool]:  # type: ignore[assignment]
        """Store a new run (pending, leased so a lost start is recovered).

        With an idempotency key the run and its guard item are written in one
        transaction, so concurrent starts with one key make exactly one run.

        Returns:
            ``(run_id, created)``: the existing run's id and False for a known key or id.
        """
        size = len(run.args.encode())
        if size > inline_payload_limit(self.settings):  # a larger payload is a reference to the blob store
            raise PayloadTooLarge(f"arguments of run {run.run_id}", size, inline_payload_limit(self.settings))
        item = self.run_item(run)
        req = item.req
        new = self.m.Run.run_id.does_not_exist()
        if run.idempotency_key is None and not timers and not run.tags:
            created = self.conditional("create run", lambda: item.save(condition=new),
                                       own=lambda: self._applied(run.run_id, req))
            return run.run_id, created
        now = item.updated_at

        def build(tx: Any) -> None:
            tx.save(item, condition=new)
            if run.idempotency_key is not None:
                guard = self.m.Guard(run.idempotency_key, run_id=run.run_id, created_at=now)
                tx.save(guard, condition=self.m.Guard.key.does_not_exist())
            for timer in timers:
                tx.save(self.timer_item(timer))
            for tag in self.tag_items(run):  # type: ignore[attr-defined]  # TagStore, mixed in
                tx.save(tag)

        if not self.transact("create run", build, own=lambda: self._applied(run.run_id, req)):
            if run.idempotency_key is not None:
                existing = self.run_for_key(run.idempotency_key)
                if existing is not None:
                    return existing, False
            return run.run_id, False
        return run.run_id, True

    def run_item(self, run: RunRecord) -> Any:
        """The model item of a new run: pending, leased (so a lost start is recovered)."""
        now = self.now()
        return self.m.Run(
            run.run_id, workflow=run.workflow, status="pending", created_at=run.created_at or now,
            status_shard=listing_key("pending", run.run_id, self.shards),
            workflow_shard=listing_key(run.workflow, run.run_id, self.shards),
            updated_at=now, args=run.args, cursor=-1, wake_seq=0, recoveries=0, cancel_requested=False,
            lease_shard=shard_of(run.run_id, self.shards), lease_expires_at=self.lease_until(),
            deadline=run.deadline, idempotency_key=run.idempotency_key, parent_run_id=run.parent_run_id,
            parent_pos=run.parent_pos, continued_from=run.continued_from, schedule_id=run.schedule_id,
            fire_time=run.fire_time, code_version=run.code_version, forked_from=run.forked_from,
            forked_at=run.forked_at, req=new_request(), tags=to_json(run.tags) if run.tags else None,
            chain_head=run.chain_head, priority=run.priority,
        )

    def _applied(self, run_id: str, req: str | None) -> bool:
        """Whether the run item carries request ``req`` (our write applied; its response was lost)."""
        try:
            with self.errors("read run"):
                return req is not None and self.m.Run.get(run_id, consistent_read=True).req == req
        except DoesNotExist:
            return False

    def run_for_key(self, key: str) -> str | None:
        """Return the run id an idempotency key maps to, if any."""
        try:
            with self.errors("read idempotency key"):
                return str(self.m.Guard.get(key, consistent_read=True).run_id)
        except DoesNotExist:
            return None

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

    def _with_results(self, items: list[Any]) -> list[RunRecord]:
        """The runs of ``items``, with the results kept in the history read back (one BatchGet)."""
        records = [_run_record(item) for item in items]
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
                  cursor: str | None = None, since: float | None = None,
                  until: float | None = None, tag: tuple[str, str] | None = None) -> Page[RunRecord]:
        """Return one page of runs, newest first, by status, workflow or tag (Query, never Scan)."""
        if tag is not None:
            if status is not None:
                raise ValueError("list_runs by tag does not combine with status")
            return self.list_tagged(tag, workflow=workflow, limit=limit, cursor=cursor,  # type: ignore[attr-defined]
                                    since=since, until=until)
        items, cursor_out = self._index_page(status, workflow, limit, cursor, since, until)
        return Page(items=self.get_runs([item.run_id for item in items]), next_cursor=cursor_out)

    def list_run_summaries(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                           cursor: str | None = None, since: float | None = None,
                           until: float | None = None) -> Page[RunSummary]:
        """``list_runs`` from the index's projected fields alone: one Query per index shard a page."""
        items, cursor_out = self._index_page(status, workflow, limit, cursor, since, until)
        return Page(items=[RunSummary(item.run_id, item.workflow, item.status, item.created_at, item.ended_at,
                                      item.parent_run_id, item.schedule_id) for item in items],
                    next_cursor=cursor_out)

    def get_runs(self, run_ids: list[str]) -> list[RunRecord]:
        """Return runs by id, in the order given (BatchGet)."""
        if not run_ids:
            return []
        with self.errors("read runs"):
            found = {record.run_id: record for record in self._with_results(list(self.m.Run.batch_get(run_ids)))}
        return [found[r] for r in run_ids if r in found]

    def advance_run(self, run_id: str, pos: int, waiting: dict[str, Any], *, recovering: bool = False) -> bool:
        """Mark op ``pos`` in flight and renew the lease (the one run write of a dispatched step).

        Returns False when another resume already moved past ``pos``, the run
        ended, or cancellation was requested.
        """
        Run = self.m.Run
        cond = (Run.cursor <= pos if recovering else Run.cursor < pos) & Run.status.is_in(*LIVE_STATUSES) & (
            Run.cancel_requested == False)  # noqa: E712 - a DynamoDB condition, not a Python test
        req = new_request()
        with flush(run_id) as counts:
            actions = [*self.status_actions(run_id, "running"), Run.cursor.set(pos), Run.waiting.set(to_json(waiting)),
                       Run.lease_expires_at.set(self.lease_until()), Run.updated_at.set(self.now()),
                       Run.req.set(req), Run.owner.remove(), *self.count_actions(counts.tally)]
            counts.applied = self.conditional("advance run", lambda: Run(run_id).update(
                actions=actions, condition=cond), own=lambda: self._applied(run_id, req))
        return counts.applied

    def suspend_run(self, run_id: str, pos: int, waiting: dict[str, Any], seen_wake: int,
                    timers: list[TimerRecord] = ()) -> bool:  # type: ignore[assignment]
        """Suspend a run at op ``pos`` (no lease) and store its timers, atomically.

        Fails (returns False) if anything woke the run since ``seen_wake`` was read.
        """
        Run = self.m.Run
        cond = (Run.wake_seq == seen_wake) & Run.status.is_in(*LIVE_STATUSES) & (Run.cursor <= pos)
        with flush(run_id) as counts:
            actions = [*self.status_actions(run_id, "suspended"), Run.cursor.set(pos),
                       Run.waiting.set(to_json(waiting)),
                       Run.lease_expires_at.remove(), Run.owner.remove(), Run.updated_at.set(self.now()),
                       *self.count_actions(counts.tally)]

            def build(tx: Any) -> None:
                tx.update(Run(run_id), actions=actions, condition=cond)
                for timer in timers:
                    tx.save(self.timer_item(timer))

            counts.applied = self.transact("suspend run", build)
        return counts.applied

    def wake_run(self, run_id: str, *, cancel: bool = False) -> RunRecord | None:
        """Tell a run that something it may wait for arrived (or that it must cancel).

        Bumps ``wake_seq`` so a concurrent suspend fails, and leases a suspended
        run so the reconciler resumes it if the resume message is lost.

        Returns:
            The run after the update, or None if it does not exist or has ended.
        """
        Run = self.m.Run
        actions = self.wake_actions()
        if cancel:
            actions.append(Run.cancel_requested.set(True))
        item = Run(run_id)
        with flush(run_id) as counts:
            actions += self.count_actions(counts.tally)
            counts.applied = self.conditional("wake run", lambda: item.update(
                actions=actions, condition=Run.status.is_in(*LIVE_STATUSES)))
        return _run_record(item) if counts.applied else None

    def claim_run(self, run_id: str, pos: int, owner: str, waiting: dict[str, Any]) -> bool:
        """Make resume ``owner`` the one executor of a run's inline steps from op ``pos`` on.

        Condition: the run is live, not cancel-requested, at most at ``pos``, and no other
        resume holds it with a live lease. Suspending, dispatching or ending releases it.
        A retry of this very request (its response lost) returns True.
        """
        Run, now = self.m.Run, self.now()
        free = Run.owner.does_not_exist() | (Run.owner == owner) | (Run.lease_expires_at < now)
        cond = (Run.cursor <= pos) & Run.status.is_in(*LIVE_STATUSES) & (Run.cancel_requested == False) & free  # noqa: E712
        with flush(run_id) as counts:
            actions = [*self.status_actions(run_id, "running"), Run.cursor.set(pos), Run.owner.set(owner),
                       Run.waiting.set(to_json(waiting)), Run.lease_expires_at.set(self.lease_until()),
                       Run.updated_at.set(now), *self.count_actions(counts.tally)]
            counts.applied = self.conditional("claim run", lambda: Run(run_id).update(
                actions=actions, condition=cond), own=lambda: self._owned_by(run_id, owner))
        return counts.applied

    def count_actions(self, tally: Tally) -> list[Any]:
        """``ADD`` the requests counted for a run (none when nothing was counted)."""
        Run = self.m.Run
        return [attr.add(n) for attr, n in ((Run.ddb_reads, tally.ddb_reads), (Run.ddb_writes, tally.ddb_writes),
                                            (Run.sqs_sends, tally.sqs_sends)) if n]

    def _owned_by(self, run_id: str, owner: str) -> bool:
        try:
            with self.errors("read run"):
                return self.m.Run.get(run_id, consistent_read=True).owner == owner  # type: ignore[no-any-return]
        except DoesNotExist:
            return False

    def renew_lease(self, run_id: str, pos: int | None = None) -> bool:
        """Extend the lease of a live, not cancel-requested run whose op ``pos`` (None: an
        inline op) still runs."""
        Run = self.m.Run
        cond = Run.status.is_in(*LIVE_STATUSES) & (Run.cancel_requested == False)  # noqa: E712
        if pos is not None:
            cond = cond & (Run.cursor == pos)
        return self.conditional("renew lease", lambda: Run(run_id).update(
            actions=[Run.lease_expires_at.set(self.lease_until())], condition=cond))

    def finish_run(self, run_id: str, status: str, *, result: str | None = None, error: str | None = None,
                   continued_to: str | None = None, wake: str | None = None,
                   owner: str | None = None, fence: int | None = None,
                   wake_record: EventRecord | None = None) -> RunRecord | None:
        """End a run; exactly one caller wins. Returns the ended run, or None if it had ended.

        ``wake``: a run to wake (the parent of a child run) in the same transaction, so the
        end and the wake it implies are one write, with ``wake_record`` (how the child ended)
        in its history; if that run has ended, the end alone is written. A result over
        :meth:`inline_result_limit` would not fit in the run item
        beside its arguments: it is written as the history record ``RUN_RESULT_SEQ`` in the
        same transaction, and reads of the run return it as ``result``. A run claimed by a
        resume other than ``owner`` with a live lease is not ended (its executor ends it).
        ``fence``: an op position whose outcome slot the same transaction takes with an
        ``end`` record (see the Store port); OutcomeRecorded if it was recorded meanwhile.
        """
        with flush(run_id) as counts:
            ended = self._finish_run(run_id, status, result, error, continued_to, (wake, wake_record), owner, fence,
                                     self.count_actions(counts.tally))
            counts.applied = ended is not None
        return ended

    def _finish_run(self, run_id: str, status: str, result: str | None, error: str | None,
                    continued_to: str | None, waking: tuple[str | None, EventRecord | None], owner: str | None,
                    fence: int | None, counted: list[Any]) -> RunRecord | None:
        wake, wake_record = waking
        notice = None if wake_record is None else self.event_item(wake_record)  # type: ignore[attr-defined]
        actions, req, outside = self._end_actions(status, result, error, continued_to, run_id)
        actions += counted
        Run, now = self.m.Run, self.now()
        free = Run.owner.does_not_exist() | (Run.lease_expires_at < now)
        if owner is not None:
            free = free | (Run.owner == owner)
        live = Run.status.is_in(*LIVE_STATUSES) & free

        def build(tx: Any, waking: bool) -> None:
            tx.update(Run(run_id), actions=actions, condition=live)
            if waking:
                tx.update(Run(wake), actions=self.wake_actions(), condition=live)
                if notice is not None:
                    tx.save(notice)
            if outside:
                tx.save(self.m.Event(run_id, RUN_RESULT_SEQ, kind="run", status=status, at=now, data=result))
            if fence is not None:
                tx.save(self.m.Event(run_id, event_seq(fence), kind=OpKind.END.value, status=status, at=now),
                        condition=self.m.Event.seq.does_not_exist())

        if wake is not None:
            reasons = self.transact_reasons("finish run", lambda tx: build(tx, True))
            if reasons is None:
                return self.find_run(run_id)
            if reasons[0] is not None:  # this run had ended, or this is our own end retried
                return self.find_run(run_id) if self._applied(run_id, req) else None
            # the run to wake has ended: write the end alone
        own = lambda: self._applied(run_id, req)  # noqa: E731
        if outside or fence is not None:
            if self.transact("finish run", lambda tx: build(tx, False), own=own):
                return self.find_run(run_id)
            refuse_taken_fence(cast("Store", self), run_id, fence)  # the store this part is mixed into
            return None
        item = Run(run_id)
        if not self.conditional("finish run", lambda: item.update(actions=actions, condition=live), own=own):
            return None
        return _run_record(item) if item.status in TERMINAL else self.find_run(run_id)

    def continue_run(self, run_id: str, successor: RunRecord, timers: list[TimerRecord] = ()  # type: ignore[assignment]
                     ) -> RunRecord | None:
        """End a run as ``continued`` and store its successor (leased, with its timers) in one
        transaction; None if the run had ended (then no successor exists)."""
        check_item_size({"args": successor.args})
        head = successor.chain_head
        actions, req, _ = self._end_actions("continued", None, None, successor.run_id, run_id, anchor=head == run_id)
        Run = self.m.Run
        item = self.run_item(successor)
        with flush(run_id) as counts:
            actions += self.count_actions(counts.tally)

            def build(tx: Any) -> None:
                tx.update(Run(run_id), actions=actions, condition=Run.status.is_in(*LIVE_STATUSES))
                tx.save(item, condition=Run.run_id.does_not_exist())
                if head is not None and head != run_id:  # the anchor names the chain's latest run
                    tx.update(Run(head), actions=[Run.chain_last.set(successor.run_id)],
                              condition=Run.run_id.exists())
                for timer in timers:
                    tx.save(self.timer_item(timer))
                for tag in self.tag_items(successor):  # type: ignore[attr-defined]  # TagStore, mixed in
                    tx.save(tag)

            counts.applied = self.transact("continue run", build, own=lambda: self._applied(run_id, req))
        return self.find_run(run_id) if counts.applied else None

    def _end_actions(self, status: str, result: str | None, error: str | None,
                     continued_to: str | None, run_id: str, *, anchor: bool = False) -> tuple[list[Any], str, bool]:
        """The end's update actions; ``anchor``: the run continues as its chain's anchor (kept: no TTL)."""
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        check_item_size({"result": result, "error": None if error is None else error[:4000]})
        Run, now, req = self.m.Run, self.now(), new_request()
        actions = [*self.status_actions(run_id, status), Run.ended_at.set(now), Run.updated_at.set(now),
                   Run.lease_expires_at.remove(), Run.req.set(req)]
        until = self.retention_of(now)
        if anchor:
            actions.append(Run.chain_last.set(continued_to))
        elif until is not None:  # the run's TTL, and the retention index that stamps its other items
            actions += [Run.retain_until.set(until), Run.retain_shard.set(shard_of(run_id, self.shards))]
        outside = result is not None and len(result.encode()) > inline_result_limit(self.settings)
        if result is not None:
            actions.append(Run.result_in_history.set(True) if outside else Run.result.set(result))
        if error is not None:
            actions.append(Run.error.set(error[:4000]))
        if continued_to is not None:
            actions.append(Run.continued_to.set(continued_to))
        return actions, req, outside

    def stale_runs(self, limit: int = 100) -> list[str]:
        """Return runs whose lease has expired, a fair share from every shard of the lease index."""
        now, Run = self.now(), self.m.Run
        items = self.read_shards("query stale leases", self.shards, limit, lambda shard: Run.by_lease.query(
            shard, Run.lease_expires_at < now))
        return [item.run_id for item in items]

    def claim_recovery(self, run_id: str) -> RunRecord | None:
        """Claim an expired lease for the reconciler (one reconciler wins) and count it."""
        Run = self.m.Run
        item, req = Run(run_id), new_request()
        ok = self.conditional("claim recovery", lambda: item.update(
            actions=[Run.recoveries.add(1), Run.lease_expires_at.set(self.lease_until()), Run.req.set(req),
                     Run.owner.remove()],  # the recovering resume takes over from a dead executor
            condition=(Run.lease_expires_at < self.now()) & Run.status.is_in(*LIVE_STATUSES)),
            own=lambda: self._applied(run_id, req))
        if not ok:
            return None
        return _run_record(item) if item.req == req else self.find_run(run_id)
