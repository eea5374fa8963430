"""The writes of runs: creation, leases, suspension, wake-ups, claims, ends, recovery, deferral."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ....errors import PayloadTooLarge
from ...model.records import (
    CREATED_FIELDS,
    RUN_RESULT_SEQ,
    TERMINAL,
    OpKind,
    RunEnding,
    RunRecord,
    RunStatus,
    Suspension,
    TimerRecord,
    event_seq,
)
from ..listing import listing_key
from ..metering import Tally, flush
from ..plans import A, Action, Add, Check, Cond, Op, Put, Remove, Set, Update, cut_error, plan
from ..recovery import recovery_claim
from ..retention import retain_until
from ..rules import (
    check_item_size,
    inline_payload_limit,
    inline_result_limit,
    new_request,
    refuse_taken_fence,
    shard_of,
)
from .base import LIVE_COND, WritesBase, carries, free, past_updates, to_json
from .items import LAST_OUTCOME, last_outcome_value, run_record, tag_items

#: A run still as created: pending, never dispatched, claimed, woken or recovered.
AS_CREATED = (A("status") == RunStatus.PENDING) & (A("cursor") == -1) & (A("wake_seq") == 0) & (A("recoveries") == 0)

if TYPE_CHECKING:
    from ..ports import Store


def count_actions(tally: Tally) -> list[Action]:
    """``ADD`` the requests counted for a run (none when nothing was counted)."""
    return [Add(name, n) for name, n in (("ddb_reads", tally.ddb_reads), ("ddb_writes", tally.ddb_writes),
                                         ("sqs_sends", tally.sqs_sends)) if n]


def still_created(run: RunRecord) -> Cond:
    """The stored run is still ``run`` as its creation wrote it (its request id and created fields), as
    created: the condition that confirms the run a fresh resume message carries without reading it."""
    cond: Cond = AS_CREATED & (A("req") == run.req)
    for name in CREATED_FIELDS:
        value = getattr(run, name)
        if name == "tags":
            value = to_json(value) if value else None
        cond = cond & (A(name).missing() if value is None else A(name) == value)
    return cond


class RunWrites(WritesBase):
    """The conditional writes of run items (see the RunStore port for each one's contract)."""

    if TYPE_CHECKING:
        def find_run(self, run_id: str) -> RunRecord | None: ...

        def run_for_key(self, key: str) -> str | None: ...

    def status_actions(self, run_id: str, status: str) -> list[Action]:
        """Set a run's status and its key in the status listing index (always together)."""
        return [Set("status", status), Set("status_shard", listing_key(status, run_id, self.settings.index_shards))]

    def timer_puts(self, timers: list[TimerRecord] | tuple[TimerRecord, ...]) -> list[Put]:
        """The puts of timers."""
        return [Put("timers", self.timer_item(timer)) for timer in timers]

    def create_run(self, run: RunRecord, *, timers: list[TimerRecord] = ()) -> tuple[str, bool]:  # type: ignore[assignment]
        """Store a new pending, leased run with its idempotency guard, timers and tag items."""
        size = len(run.args.encode())
        if size > inline_payload_limit(self.settings):  # a larger payload is a reference to the blob store
            raise PayloadTooLarge(f"arguments of run {run.run_id}", size, inline_payload_limit(self.settings))
        item = self.run_item(run)
        ops: list[Op] = [Put("runs", item, A("run_id").missing())]
        if run.idempotency_key is not None:
            guard = {"key": run.idempotency_key, "run_id": run.run_id, "created_at": item["updated_at"]}
            ops.append(Put("idempotency", guard, A("key").missing()))
        ops += self.timer_puts(timers)
        ops += [Put("tags", tag) for tag in tag_items(run)]
        req = item["req"]
        if self.commit(plan("create run", *ops, token=req, own=carries("runs", (run.run_id,), req))):
            return run.run_id, True
        existing = None if run.idempotency_key is None else self.run_for_key(run.idempotency_key)
        return (run.run_id, False) if existing is None else (existing, False)

    def _run_write(self, name: str, run_id: str, actions: list[Action], cond: Any, *,
                   own: Check | None = None) -> Any:
        """One conditional update of a run item with the requests counted for it."""
        with flush(run_id) as counts:
            done = self.commit(plan(name, Update("runs", (run_id,), (*actions, *count_actions(counts.tally)), cond),
                                    own=own))
            counts.applied = done.applied
        return done

    def advance_run(self, run_id: str, pos: int, waiting: dict[str, Any], *, recovering: bool = False,
                    owner: str | None = None) -> bool:
        """Mark op ``pos`` in flight and renew the lease (a retry of this very request is True); never
        while another resume than ``owner`` holds the run with a live claim."""
        cursor = (A("cursor") <= pos if recovering else A("cursor") < pos) & free(self.now(), owner)
        req = new_request()
        return bool(self._run_write("advance run", run_id, [
            *self.status_actions(run_id, RunStatus.RUNNING), Set("cursor", pos), Set("waiting", to_json(waiting)),
            Set("lease_expires_at", self.lease_until()), Set("updated_at", self.now()), Set("req", req),
            Set("sent", pos), Remove("owner")], cursor & LIVE_COND & (A("cancel_requested") == False),  # noqa: E712
            own=carries("runs", (run_id,), req)))

    def suspend_run(self, run_id: str, at: Suspension, seen_wake: int, *, lease: bool = False,
                    first: bool = False) -> bool:
        """Suspend ``at`` its position (lease removed, or renewed if ``lease``) and store its timers, in one
        request (``first``: only if the cursor is still before the position; see the RunStore port)."""
        pos, waiting, timers = at.pos, at.waiting, at.timers
        cond = (A("wake_seq") == seen_wake) & LIVE_COND & ((A("cursor") < pos) if first else (A("cursor") <= pos))
        leased = Set("lease_expires_at", self.lease_until()) if lease else Remove("lease_expires_at")
        # ``first``: a retry of this request whose response was lost finds the cursor at ``pos`` and is
        # recognised by its request id (else the resume would think it lost and send nothing).
        req = new_request() if first else None
        mark = (Set("req", req),) if req is not None else ()
        with flush(run_id) as counts:
            suspended = self.status_actions(run_id, RunStatus.SUSPENDED)
            actions = (*suspended, Set("cursor", pos), Set("waiting", to_json(waiting)),
                       leased, Remove("owner"), Set("updated_at", self.now()), *mark,
                       *count_actions(counts.tally))
            counts.applied = self.commit(plan("suspend run", Update("runs", (run_id,), actions, cond),
                                              *self.timer_puts(timers),
                                              own=None if req is None else carries("runs", (run_id,), req))).applied
        return counts.applied

    def wake_run(self, run_id: str, *, cancel: bool = False, at: int | None = None) -> RunRecord | None:
        """Bump ``wake_seq`` and lease a leaseless run (optionally request cancel; ``at``: only while its
        cursor is that position); the run after it."""
        cond = LIVE_COND if at is None else LIVE_COND & (A("cursor") == at)
        done = self._run_write("wake run", run_id, [*self.wake_actions(), *([Set("cancel_requested", True)]
                                                                           if cancel else [])], cond)
        return run_record(done.item) if done.applied else None

    def claim_run(self, run_id: str, pos: int, owner: str, waiting: dict[str, Any], *,
                  as_created: RunRecord | None = None) -> bool:
        """Make resume ``owner`` the one executor of the run's inline steps from ``pos`` on (``as_created``:
        only if the stored run is still this run, as created); False if another resume holds it, the
        cursor is past ``pos``, op ``pos`` was sent as a message, or an update was recorded at ``pos`` or
        after it (the claimer's history is stale)."""
        now = self.now()
        cond = (A("cursor") <= pos) & LIVE_COND & (A("cancel_requested") == False) & free(now, owner)  # noqa: E712
        cond = cond & (A("sent").missing() | (A("sent") < pos))  # op ``pos`` was never sent as a message
        cond = cond & past_updates(pos)  # a history read before an update at ``pos`` or after it is stale
        if as_created is not None:
            cond = cond & still_created(as_created)
        return bool(self._run_write("claim run", run_id, [
            *self.status_actions(run_id, RunStatus.RUNNING), Set("cursor", pos), Set("owner", owner),
            Set("waiting", to_json(waiting)), Set("lease_expires_at", self.lease_until()), Set("updated_at", now)],
            cond, own=Check("runs", (run_id,), A("owner") == owner)))

    def renew_lease(self, run_id: str, pos: int | None = None, *, since: int | None = None) -> bool:
        """Extend the lease of a live, not cancel-requested run (whose cursor is ``pos``, if given;
        with ``since``, anywhere from ``since`` to ``pos``)."""
        cond = LIVE_COND & (A("cancel_requested") == False)  # noqa: E712
        if pos is not None:
            cond = cond & ((A("cursor") == pos) if since is None else ((A("cursor") >= since) & (A("cursor") <= pos)))
        return self.commit(plan("renew lease", Update("runs", (run_id,), (Set("lease_expires_at", self.lease_until()),),
                                                      cond))).applied

    def end_actions(self, run_id: str, ending: RunEnding, req: str, *, outside: bool = False,
                    anchor: bool = False) -> list[Action]:
        """The end's update actions; ``outside``: the result is kept in history; ``anchor``: the run
        continues as new as its chain's anchor (kept: no TTL); ``ending.swept``: the run goes to the retention
        index (else its other items all expire late enough already: ``core.retention.needs_sweep``)."""
        status, result, continued_to = ending.status, ending.result, ending.continued_to
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        error = cut_error(ending.error)
        check_item_size({"result": result, "error": error})
        now = self.now()
        actions = [*self.status_actions(run_id, status), Set("ended_at", now), Set("updated_at", now),
                   Remove("lease_expires_at"), Set("req", req)]
        until = retain_until(now, self.settings)
        if anchor:
            actions.append(Set("chain_last", continued_to))
        elif until is not None:  # the run's TTL, and the retention index that stamps its other items
            actions.append(Set("retain_until", until))
            if ending.swept:
                actions.append(Set("retain_shard", shard_of(run_id, self.settings.index_shards)))
        if result is not None:
            actions.append(Set("result_in_history", True) if outside else Set("result", result))
        if error is not None:
            actions.append(Set("error", error))
        if continued_to is not None:
            actions.append(Set("continued_to", continued_to))
        return actions

    def finish_run(self, run_id: str, ending: RunEnding) -> RunRecord | None:
        """End a live run; exactly one caller wins (see the RunStore port)."""
        with flush(run_id) as counts:
            ended = self._finish_run(run_id, ending, count_actions(counts.tally))
            counts.applied = ended is not None
        return ended

    def _finish_run(self, run_id: str, ending: RunEnding, counted: list[Action]) -> RunRecord | None:
        status, result, owner, last, fence = ending.status, ending.result, ending.owner, ending.last, ending.fence
        wake, wake_record, timers = ending.wake, ending.wake_record, ending.timers
        now, req = self.now(), new_request()
        outside = result is not None and len(result.encode()) > inline_result_limit(self.settings)
        actions = self.end_actions(run_id, ending, req, outside=outside)
        cond = LIVE_COND & free(now, owner)
        if last is not None:  # the op's outcome goes with the end: only while ``owner`` holds the run (see the port)
            actions.append(Set(LAST_OUTCOME, last_outcome_value(last)))
            cond = LIVE_COND & (A("owner") == owner)
        end = Update("runs", (run_id,), (*actions, *counted), cond)
        own = carries("runs", (run_id,), req)
        kept: list[Op] = [*self.timer_puts(timers)]
        if outside:
            kept.append(Put("history", {"run_id": run_id, "seq": RUN_RESULT_SEQ, "kind": "run", "status": status,
                                        "at": now, "data": result}))
        if fence is not None:
            kept.append(Put("history", {"run_id": run_id, "seq": event_seq(fence), "kind": OpKind.END.value,
                                        "status": status, "at": now}, A("seq").missing()))
        if wake is not None:
            notice = [] if wake_record is None else [Put("history", self.event_item(wake_record))]
            done = self.commit(plan("finish run", end, Update("runs", (wake,), self.wake_actions(), LIVE_COND),
                                    *kept, *notice, token=req, own=own))
            if done.applied:
                return self.find_run(run_id)
            if done.reasons[0] is not None:  # this run has ended, or another resume holds it
                return None
            # the run to wake has ended: write the end alone
        if kept:
            if self.commit(plan("finish run", end, *kept, own=own)):
                return self.find_run(run_id)
            refuse_taken_fence(cast("Store", self), run_id, fence)
            return None
        done = self.commit(plan("finish run", end, own=own))  # one UpdateItem returning the run after it
        if not done.applied:
            return None
        return run_record(done.item) if done.item is not None else self.find_run(run_id)

    def continue_run(self, run_id: str, successor: RunRecord, timers: list[TimerRecord] = ()  # type: ignore[assignment]
                     ) -> RunRecord | None:
        """End a live run as ``continued`` and create its successor with its timers, in one transaction."""
        check_item_size({"args": successor.args})
        head, req = successor.chain_head, new_request()
        ended = RunEnding(RunStatus.CONTINUED, continued_to=successor.run_id)
        actions = self.end_actions(run_id, ended, req, anchor=head == run_id)
        with flush(run_id) as counts:
            ops: list[Op] = [Update("runs", (run_id,), (*actions, *count_actions(counts.tally)), LIVE_COND),
                   Put("runs", self.run_item(successor), A("run_id").missing())]
            if head is not None and head != run_id:  # the anchor names the chain's latest run
                ops.append(Update("runs", (head,), (Set("chain_last", successor.run_id),), A("run_id").exists()))
            ops += self.timer_puts(timers)
            ops += [Put("tags", tag) for tag in tag_items(successor)]
            counts.applied = self.commit(plan("continue run", *ops, token=req,
                                              own=carries("runs", (run_id,), req))).applied
        return self.find_run(run_id) if counts.applied else None

    def claim_recovery(self, seen: RunRecord) -> RunRecord | None:
        """Take over an expired lease (one claimer wins), release a dead executor's claim, and count the
        recovery as ``core.recovery`` decides from ``seen`` (the run as read before), which the condition
        checks is still what it read."""
        claim = recovery_claim(seen, self.settings)
        req, run_id = new_request(), seen.run_id
        pending = A("recovery_pending").missing() if not seen.recovery_pending else (
            A("recovery_pending") == seen.recovery_pending)
        actions: list[Action] = [
            Add("recoveries", 1), Set("recovery_pending", claim.pending),
            Set("lease_expires_at", self.lease_until(claim.lease_seconds)), Set("req", req), Remove("owner"),
            *([Add("recovery_faults", 1)] if claim.counted else [])]
        done = self.commit(plan("claim recovery", Update("runs", (run_id,), tuple(actions), (
            (A("lease_expires_at") < self.now()) & LIVE_COND & pending & (A("cursor") == seen.cursor))),
            own=carries("runs", (run_id,), req)))
        if not done.applied:
            return None
        return run_record(done.item) if done.item is not None else self.find_run(run_id)

    def take_recovery(self, seen: RunRecord) -> bool:
        """A worker took the run while a recovery was pending (``seen``: the run as read): note the cursor it
        took it at, and extend a lease that is about to lapse to one run lease from now (never shorten one:
        another resume may hold it), while the lease is still the one read."""
        lease = A("lease_expires_at").missing() if seen.lease_expires_at is None else (
            A("lease_expires_at") == seen.lease_expires_at)
        until = self.lease_until()
        extend = seen.lease_expires_at is not None and seen.lease_expires_at < until
        actions: list[Action] = [Remove("recovery_pending"), Set("recovery_taken_at", seen.cursor),
                                 *([Set("lease_expires_at", until)] if extend else [])]
        return self.commit(plan("take recovery", Update("runs", (seen.run_id,), tuple(actions), (
            A("recovery_pending").exists() & LIVE_COND & lease)))).applied

    def defer_run(self, run_id: str, seen_wake: int, timer: TimerRecord,
                  deferral: dict[str, Any] | None = None, status: str = RunStatus.SUSPENDED) -> bool:
        """Leave a run this worker cannot serve to another, or park it: ``status``, no lease, no
        claim, its ``deferral``, and its timer, in one transaction."""
        now = self.now()
        actions = [*self.status_actions(run_id, status), Remove("lease_expires_at"), Remove("owner"),
                   Set("updated_at", now), *([] if deferral is None else [Set("deferral", to_json(deferral))])]
        cond = (A("wake_seq") == seen_wake) & LIVE_COND & free(now)
        return self.commit(plan("defer run", Update("runs", (run_id,), tuple(actions), cond),
                                *self.timer_puts([timer]))).applied
