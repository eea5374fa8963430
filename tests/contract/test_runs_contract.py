"""Store contract: runs (creation, conditions of every run write, leases, listings)."""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid

import pytest

from tests.contract.support import record_outcome
from workflows.core.model.control import OutcomeRecorded
from workflows.core.model.records import EventRecord, RunEnding, Suspension, TimeRange, event_seq
from workflows.core.storage.recovery import resend_lease
from workflows.errors import ItemTooLarge, PayloadTooLarge, RunNotFound, SerializationError

from .support import due_ids, run_record, start, timer, uid


def test_created_run_is_pending_and_leased(store, clock) -> None:  # type: ignore[no-untyped-def]
    record = run_record(store, deadline=store.now() + 500, parent_run_id="parent", parent_pos=3,
                        continued_from="before", schedule_id="sched", fire_time=12.5)
    clock.advance(2)
    assert store.create_run(record) == (record.run_id, True)
    run = store.get_run(record.run_id)
    assert (run.status, run.cursor, run.wake_seq, run.recoveries, run.cancel_requested) == ("pending", -1, 0, 0, False)
    assert run.lease_expires_at == store.lease_until() and run.lease_expires_at % 6 == 0  # rounded to a bucket
    assert (run.created_at, run.updated_at, run.args, run.waiting, run.ended_at) == (
        record.created_at, store.now(), "[[1],{}]", None, None)
    assert (run.deadline, run.parent_run_id, run.parent_pos, run.continued_from, run.schedule_id, run.fire_time) == (
        record.deadline, "parent", 3, "before", "sched", 12.5)
    unset = store.create_run(run_record(store, created_at=0))[0]
    assert store.get_run(unset).created_at == store.now()


def test_idempotency_key_maps_to_the_first_run(store) -> None:  # type: ignore[no-untyped-def]
    key = uid("key")
    first = start(store, key=key)
    assert store.create_run(run_record(store, key=key)) == (first, False)
    assert store.run_for_key(key) == first
    assert store.get_run(first).idempotency_key == key
    assert store.run_for_key(uid("key")) is None


def test_failed_creation_writes_neither_guard_nor_timers(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    key, late = uid("key"), timer(run_id, 0, store.now() + 1)
    assert store.create_run(run_record(store, run_id=run_id, key=key), timers=[late]) == (run_id, False)
    assert store.run_for_key(key) is None
    clock.advance(10)
    assert due_ids(store, run_id) == set()


def test_create_run_stores_its_timers(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = uid()
    timers = [timer(run_id, -1, store.now() + 100, kind="deadline"), timer(run_id, 0, store.now() + 5)]
    assert store.create_run(run_record(store, run_id=run_id), timers=timers) == (run_id, True)
    assert due_ids(store, run_id) == set()
    clock.advance(100)
    assert due_ids(store, run_id) == {t.timer_id for t in timers}


def test_runs_are_read_by_id_and_in_batches(store) -> None:  # type: ignore[no-untyped-def]
    a, b, missing = start(store), start(store), uid()
    with pytest.raises(RunNotFound):
        store.get_run(missing)
    assert store.find_run(missing) is None
    assert store.find_run(a).run_id == a  # type: ignore[union-attr]
    assert [r.run_id for r in store.get_runs([b, missing, a])] == [b, a]
    assert [r.run_id for r in store.get_runs([a, a])] == [a, a]
    assert store.get_runs([]) == []
    many = [start(store) for _ in range(105)]  # more than one BatchGet
    assert [r.run_id for r in store.get_runs(many)] == many


def test_advance_run_conditions(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.advance_run(run_id, 0, {"kind": "step", "name": "a"}) is True
    run = store.get_run(run_id)
    assert (run.status, run.cursor, run.waiting) == ("running", 0, {"kind": "step", "name": "a"})
    assert store.advance_run(run_id, 0, {}) is False  # not past the cursor
    assert store.advance_run(run_id, 0, {"again": True}, recovering=True) is True  # a recovery redoes it
    clock.advance(7)
    assert store.advance_run(run_id, 2, {"kind": "step"}) is True
    assert store.get_run(run_id).lease_expires_at == store.lease_until()
    assert store.advance_run(run_id, 1, {}, recovering=True) is False  # behind the cursor
    store.wake_run(run_id, cancel=True)
    assert store.advance_run(run_id, 3, {}) is False  # cancel requested
    assert store.advance_run(uid(), 0, {}) is False
    ended = start(store)
    store.finish_run(ended, RunEnding("completed"))
    assert store.advance_run(ended, 0, {}) is False and store.advance_run(ended, 0, {}, recovering=True) is False


def test_a_race_suspends_with_a_lease_that_recovery_finds(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    seen = store.get_run(run_id).wake_seq
    waiting = {"kind": "first_of", "name": "signal:go | step:s"}
    assert store.suspend_run(run_id, Suspension(0, waiting), seen, lease=True) is True
    run = store.get_run(run_id)
    assert (run.status, run.cursor, run.waiting) == ("suspended", 0, waiting) and run.lease_expires_at is not None
    assert store.renew_lease(run_id, 0)  # a race's step renews it while it runs
    clock.advance(store.settings.lease_seconds + 60)
    assert run_id in store.stale_runs(limit=1_000_000)  # a step message lost: recovery finds the run
    assert store.claim_recovery(store.get_run(run_id)) is not None


def test_only_the_first_resume_at_a_race_suspends_to_send_its_steps(store, clock) -> None:  # type: ignore[no-untyped-def]
    # Two resumes of one wake read the run before the race and both decide to send its step: the second
    # suspend used to pass too (same wake_seq, cursor <= pos) and sent the step again (simulator seed 593).
    run_id = start(store)
    store.advance_run(run_id, 0, {})
    seen = store.get_run(run_id).wake_seq
    waiting = {"kind": "first_of", "name": "signal:go | step:s"}
    assert store.suspend_run(run_id, Suspension(1, waiting), seen, lease=True, first=True) is True
    assert store.suspend_run(run_id, Suspension(1, waiting), seen, lease=True, first=True) is False  # the other resume
    assert store.suspend_run(run_id, Suspension(1, waiting), seen, lease=True) is True  # a suspend that sends nothing


def test_no_other_resume_marks_an_op_in_flight_under_a_live_claim(store, clock) -> None:  # type: ignore[no-untyped-def]
    # A recovering resume (cursor <= pos) used to mark the op in flight and send it while another resume
    # held the run's claim and ran that op in place: the run was left with no lease holder (seed 3475).
    run_id = start(store)
    assert store.claim_run(run_id, 1, "resume-a", {})
    assert store.advance_run(run_id, 1, {}, recovering=True, owner="resume-b") is False
    assert store.advance_run(run_id, 1, {}, recovering=True) is False  # nor one that names no owner
    assert store.advance_run(run_id, 1, {}, recovering=True, owner="resume-a") is True  # the holder may
    other = start(store)
    assert store.claim_run(other, 1, "resume-a", {})
    clock.advance(store.settings.lease_seconds + 60)
    assert store.advance_run(other, 1, {}, recovering=True, owner="resume-b") is True  # its claim expired


def test_suspend_run_needs_the_wake_seq_it_saw(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    store.advance_run(run_id, 0, {})
    seen = store.get_run(run_id).wake_seq
    sleep = timer(run_id, 1, store.now() + 10)
    store.wake_run(run_id)  # something arrived after the read
    assert store.suspend_run(run_id, Suspension(1, {"kind": "sleep"}, [sleep]), seen) is False
    run = store.get_run(run_id)
    assert (run.status, run.cursor) == ("running", 0)
    clock.advance(10)
    assert due_ids(store, run_id) == set()  # the timer went with the failed suspend
    assert store.suspend_run(run_id, Suspension(1, {"kind": "sleep"}, [sleep]), run.wake_seq) is True
    run = store.get_run(run_id)
    assert (run.status, run.cursor, run.lease_expires_at, run.waiting) == ("suspended", 1, None, {"kind": "sleep"})
    assert due_ids(store, run_id) == {sleep.timer_id}
    assert store.suspend_run(run_id, Suspension(0, {}), run.wake_seq) is False  # behind the cursor
    assert store.suspend_run(run_id, Suspension(1, {"kind": "again"}), run.wake_seq) is True
    store.finish_run(run_id, RunEnding("cancelled"))
    assert store.suspend_run(run_id, Suspension(2, {}), run.wake_seq) is False
    assert store.suspend_run(uid(), Suspension(0, {}), 0) is False


def test_wake_run_on_live_ended_and_missing_runs(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    store.advance_run(run_id, 0, {})
    run = store.get_run(run_id)
    store.suspend_run(run_id, Suspension(1, {}), run.wake_seq)
    clock.advance(100)
    woken = store.wake_run(run_id)
    assert (woken.wake_seq, woken.status) == (run.wake_seq + 1, "suspended")
    assert woken.lease_expires_at == store.lease_until(min(store.settings.lease_seconds, 30.0))
    clock.advance(3)
    again = store.wake_run(run_id, cancel=True)
    assert again.wake_seq == run.wake_seq + 2 and again.cancel_requested is True
    assert again.lease_expires_at == woken.lease_expires_at  # a leased run keeps its lease
    assert store.get_run(run_id).cancel_requested is True
    store.finish_run(run_id, RunEnding("cancelled"))
    assert store.wake_run(run_id) is None
    assert store.get_run(run_id).wake_seq == run.wake_seq + 2
    missing = uid()
    assert store.wake_run(missing) is None and store.find_run(missing) is None


def test_renew_lease(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    store.advance_run(run_id, 0, {})
    clock.advance(20)
    assert store.renew_lease(run_id) is True
    assert store.get_run(run_id).lease_expires_at == store.lease_until()
    clock.advance(20)
    assert store.renew_lease(run_id, pos=0) is True
    assert store.get_run(run_id).lease_expires_at == store.lease_until()
    assert store.renew_lease(run_id, pos=1) is False
    store.finish_run(run_id, RunEnding("completed"))
    assert store.renew_lease(run_id) is False and store.get_run(run_id).lease_expires_at is None
    assert store.renew_lease(uid()) is False


def test_a_renewal_since_a_stale_cursor_takes_any_cursor_up_to_the_frontier(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    store.advance_run(run_id, 1, {})
    clock.advance(20)
    assert store.renew_lease(run_id, 2, since=0) is True  # read at 0, knows 2: the cursor moved to 1 since
    assert store.get_run(run_id).lease_expires_at == store.lease_until()
    assert store.renew_lease(run_id, 1, since=1) is True
    assert store.renew_lease(run_id, 3, since=2) is False  # below what this resume read: not its run
    assert store.renew_lease(run_id, 0, since=0) is False  # past what it knows: another resume moved on


def test_renewal_is_refused_once_a_cancel_is_requested(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    store.advance_run(run_id, 0, {})
    store.wake_run(run_id, cancel=True)
    assert store.renew_lease(run_id) is False and store.renew_lease(run_id, pos=0) is False


@pytest.mark.parametrize("status", ["cancelled", "timed_out", "completed"])
def test_a_run_claimed_by_a_live_resume_is_ended_only_by_it(store, clock, status) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.claim_run(run_id, 0, "executor", {"kind": "step", "name": "s"})
    assert store.finish_run(run_id, RunEnding(status)) is None  # another resume runs its inline steps
    assert store.finish_run(run_id, RunEnding(status, owner="someone else")) is None
    assert store.get_run(run_id).status == "running"
    assert store.finish_run(run_id, RunEnding(status, owner="executor")).status == status


def test_a_claim_is_refused_at_an_op_marked_in_flight_for_a_message(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    waiting = {"kind": "step", "name": "s"}
    assert store.advance_run(run_id, 0, waiting)
    assert not store.claim_run(run_id, 0, "late", waiting)  # its message may be running op 0
    assert store.claim_run(run_id, 1, "next", waiting)


def test_a_claim_confirms_the_run_a_fresh_message_carried(store) -> None:  # type: ignore[no-untyped-def]
    record = run_record(store, req=uid("req"), tags={"team": "a"})
    run_id = store.create_run(record)[0]
    waiting = {"kind": "step", "name": "s"}
    other = dataclasses.replace(record, args="[[2],{}]")
    assert not store.claim_run(run_id, 0, "r", waiting, as_created=other)  # not what was created
    assert not store.claim_run(run_id, 0, "r", waiting, as_created=dataclasses.replace(record, req="forged"))
    assert not store.claim_run(uid(), 0, "r", waiting, as_created=dataclasses.replace(record, run_id=uid()))
    assert store.claim_run(run_id, 0, "r", waiting, as_created=record)
    assert not store.claim_run(run_id, 1, "r2", waiting, as_created=record)  # claimed: no longer as created


def test_an_end_carries_the_last_outcome_only_for_the_claim_holder(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    waiting = {"kind": "step", "name": "s"}
    last = EventRecord(run_id=run_id, seq=event_seq(0), kind="step", status="completed", at=store.now(), name="s",
                       data='"v"', attempt=1, started_at=store.now() - 1)
    assert store.claim_run(run_id, 0, "executor", waiting)
    assert store.finish_run(run_id, RunEnding("completed", result="1", owner="someone else", last=last)) is None
    clock.advance(store.settings.lease_seconds + 10)  # an expired claim is still this resume's: nobody took it
    ended = store.finish_run(run_id, RunEnding("completed", result="1", owner="executor", last=last))
    assert ended is not None and ended.last_outcome == last
    assert store.get_run(run_id).last_outcome == last and store.read_history(run_id) == []


def test_an_end_with_the_last_outcome_is_refused_once_the_claim_is_released(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    waiting = {"kind": "step", "name": "s"}
    last = EventRecord(run_id=run_id, seq=event_seq(0), kind="step", status="completed", at=store.now(), name="s")
    assert store.claim_run(run_id, 0, "executor", waiting)
    clock.advance(store.settings.lease_seconds + 10)
    assert store.claim_recovery(store.get_run(run_id)) is not None  # the reconciler took the run over
    assert store.finish_run(run_id, RunEnding("completed", owner="executor", last=last)) is None
    assert store.get_run(run_id).status == "running"


def test_a_claim_whose_lease_expired_does_not_keep_a_run_from_ending(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.claim_run(run_id, 0, "executor", {"kind": "step", "name": "s"})
    clock.advance(store.settings.lease_seconds + 10)
    assert store.finish_run(run_id, RunEnding("cancelled")).status == "cancelled"


def test_finish_run_once(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    with pytest.raises(ValueError):
        store.finish_run(run_id, RunEnding("running"))
    clock.advance(5)
    ended = store.finish_run(run_id, RunEnding("failed", result="r", error="e" * 5000, continued_to="next"))
    assert (ended.status, ended.result, ended.error, ended.continued_to) == ("failed", "r", "e" * 4000, "next")
    assert (ended.ended_at, ended.updated_at, ended.lease_expires_at) == (store.now(), store.now(), None)
    assert store.finish_run(run_id, RunEnding("completed", result="late")) is None
    assert store.get_run(run_id) == ended
    assert store.finish_run(uid(), RunEnding("completed")) is None


@pytest.mark.parametrize("wake", [False, True])
def test_an_end_takes_the_outcome_slot_of_its_fence(store, clock, wake) -> None:  # type: ignore[no-untyped-def]
    """The end writes an ``end`` record in the fence's outcome slot, in the same write; a slot
    recorded meanwhile refuses the end (OutcomeRecorded) and leaves the run live."""
    parent = start(store) if wake else None
    run_id = start(store)
    assert record_outcome(store, run_id, 0, "step", "completed", data="1")
    assert record_outcome(store, run_id, 1, "step", "completed", data="2")
    with pytest.raises(OutcomeRecorded):
        store.finish_run(run_id, RunEnding("cancelled", error="cancelled", wake=parent, fence=1))
    assert store.get_run(run_id).status == "pending" and len(store.read_history(run_id)) == 2
    ended = store.finish_run(run_id, RunEnding("cancelled", error="cancelled", wake=parent, fence=2))
    assert ended.status == "cancelled"
    end = store.get_outcome(run_id, 2)
    assert (end.kind, end.status, end.at, end.data) == ("end", "cancelled", store.now(), None)
    assert not record_outcome(store, run_id, 2, "step", "completed", data="3")  # the step's late outcome
    assert store.finish_run(run_id, RunEnding("cancelled", fence=3)) is None  # ended: no OutcomeRecorded, no record
    assert [e.pos for e in store.read_history(run_id)] == [0, 1, 2]


def test_stale_runs_and_claim_recovery(store, clock) -> None:  # type: ignore[no-untyped-def]
    lease = store.settings.lease_seconds
    run_id, parked = start(store), start(store)
    store.advance_run(parked, 0, {})
    store.suspend_run(parked, Suspension(1, {}), 0)  # a suspended run has no lease: never stale
    assert run_id not in store.stale_runs(limit=1_000_000)
    assert store.claim_recovery(store.get_run(run_id)) is None  # the lease has not expired
    clock.advance(lease * 3)
    stale = store.stale_runs(limit=1_000_000)
    assert run_id in stale and parked not in stale
    seen = store.get_run(run_id)
    claimed = store.claim_recovery(seen)
    assert (claimed.recoveries, claimed.recovery_pending, claimed.recovery_faults) == (1, 1, 0)
    assert claimed.lease_expires_at == store.lease_until()
    assert store.claim_recovery(seen) is None  # one claimer wins
    assert run_id not in store.stale_runs(limit=1_000_000)
    clock.advance(lease * 3)
    assert store.claim_recovery(store.get_run(run_id)).recoveries == 2
    store.finish_run(run_id, RunEnding("failed"))
    clock.advance(lease * 3)
    assert run_id not in store.stale_runs(limit=1_000_000)
    assert store.claim_recovery(store.get_run(run_id)) is None


def test_a_recovery_no_worker_took_is_sent_again_uncounted_with_a_doubling_lease(store, clock) -> None:  # type: ignore[no-untyped-def]
    lease = store.settings.lease_seconds
    run_id = start(store)
    for resend in range(1, 5):
        clock.advance(lease * 64)
        claimed = store.claim_recovery(store.get_run(run_id))
        assert (claimed.recoveries, claimed.recovery_pending, claimed.recovery_faults) == (resend, resend, 0)
        assert claimed.lease_expires_at == store.lease_until(resend_lease(resend - 1, store.settings))
    assert store.take_recovery(store.get_run(run_id))  # a worker takes one of the queued resumes
    taken = store.get_run(run_id)
    assert (taken.recovery_pending, taken.recovery_taken_at, taken.recovery_faults) == (0, -1, 0)
    assert not store.take_recovery(taken)  # nothing pending: nothing written
    clock.advance(lease * 64)
    claimed = store.claim_recovery(store.get_run(run_id))  # it died with the run at the same cursor: a fault
    assert (claimed.recovery_pending, claimed.recovery_faults) == (1, 1)


def test_a_recovery_after_the_run_moved_on_counts_nothing(store, clock) -> None:  # type: ignore[no-untyped-def]
    lease = store.settings.lease_seconds
    run_id = start(store)
    clock.advance(lease * 3)
    store.claim_recovery(store.get_run(run_id))
    assert store.take_recovery(store.get_run(run_id))
    assert store.advance_run(run_id, 0, {"kind": "step"}, recovering=True)  # the run moved on
    stale = store.get_run(run_id)
    clock.advance(lease * 3)
    assert store.claim_recovery(stale).recovery_faults == 0  # a queue wait, not the worker that took it


def test_a_claim_or_take_on_a_stale_read_writes_nothing(store, clock) -> None:  # type: ignore[no-untyped-def]
    lease = store.settings.lease_seconds
    run_id = start(store)
    clock.advance(lease * 3)
    before = store.get_run(run_id)
    store.claim_recovery(before)
    clock.advance(lease * 3)
    assert store.claim_recovery(before) is None  # it read no recovery pending: one is
    pending = store.get_run(run_id)
    assert store.renew_lease(run_id, -1)  # another resume renews the lease after the read
    assert not store.take_recovery(pending)  # never touches a lease it did not read
    assert store.get_run(run_id).recovery_pending == 1


def test_stale_runs_limit(store, clock) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):
        start(store)
    clock.advance(store.settings.lease_seconds * 3)
    assert len(store.stale_runs(limit=2)) == 2


def _pages(store, **query) -> list[list[str]]:  # type: ignore[no-untyped-def]
    pages, cursor = [], None
    while True:
        page = store.list_runs(cursor=cursor, **query)
        assert len(page) <= query.get("limit", 50)
        pages.append([r.run_id for r in page])
        if page.next_cursor is None:
            return pages
        assert len(page) == query.get("limit", 50)  # only a full page has a next one
        cursor = page.next_cursor


@pytest.mark.parametrize("count", [5, 4])
def test_list_runs_newest_first_with_paging(store, count: int) -> None:  # type: ignore[no-untyped-def]
    workflow, base = uid("wf"), store.now()
    ids = [start(store, workflow=workflow, created_at=base + i) for i in range(count)]
    newest = ids[::-1]
    assert [r for page in _pages(store, workflow=workflow, limit=2) for r in page] == newest
    by_status = _pages(store, status="pending", workflow=workflow, limit=2, created=TimeRange(base, base + count))
    assert [r for page in by_status for r in page] == newest
    window = store.list_runs(workflow=workflow, created=TimeRange(base + 1, base + 3))
    assert [r.run_id for r in window] == [ids[3], ids[2], ids[1]] and window.next_cursor is None
    whole = store.list_runs(workflow=workflow, limit=50)
    assert [r.run_id for r in whole] == newest and whole.next_cursor is None
    assert all(r.workflow == workflow and r.status == "pending" for r in whole)
    store.finish_run(ids[0], RunEnding("completed"))
    assert [r.run_id for r in store.list_runs(status="completed", workflow=workflow)] == [ids[0]]
    assert [r.run_id for r in store.list_runs(status="pending", workflow=workflow)] == newest[:-1]


def test_list_runs_rejects_bad_cursors(store) -> None:  # type: ignore[no-untyped-def]
    workflow = uid("wf")
    for i in range(2):
        start(store, workflow=workflow, created_at=store.now() + i)
    with pytest.raises(ValueError):
        store.list_runs()
    page = store.list_runs(workflow=workflow, limit=1)
    assert page.next_cursor is not None
    for bad in ("not a cursor", base64.urlsafe_b64encode(b"[1, 2]").decode(),
                base64.urlsafe_b64encode(json.dumps({"run_id": {"S": "x"}}).encode()).decode(),
                page.next_cursor):  # a by-workflow cursor used for a by-status listing
        with pytest.raises(SerializationError):
            store.list_runs(status="pending", cursor=bad)
    assert len(store.list_runs(workflow=workflow, cursor=page.next_cursor)) == 1


def test_oversize_run_fields_are_refused_before_any_write(store) -> None:  # type: ignore[no-untyped-def]
    record = run_record(store)
    record.args = "x" * 500_000
    with pytest.raises(PayloadTooLarge):  # arguments are held to the payload limit, as stored
        store.create_run(record)
    assert store.find_run(record.run_id) is None
    run_id = start(store)
    with pytest.raises(ItemTooLarge):
        store.finish_run(run_id, RunEnding("completed", result="x" * 500_000))
    assert store.get_run(run_id).status == "pending"


def counts(run) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return run.ddb_reads, run.ddb_writes, run.sqs_sends


def test_run_writes_carry_the_requests_counted_for_the_run(store) -> None:  # type: ignore[no-untyped-def]
    from workflows.core.storage.metering import Tally, meter

    run_id = start(store)
    assert counts(store.get_run(run_id)) == (0, 0, 0)
    meter.count(run_id, Tally(ddb_reads=2, ddb_writes=1, sqs_sends=1))
    assert store.advance_run(run_id, 0, {"kind": "step"}) is True
    assert counts(store.get_run(run_id)) == (2, 1, 1) and not meter.waiting(run_id)
    meter.count(run_id, Tally(ddb_reads=1))
    assert store.advance_run(run_id, 0, {}) is False  # a write that did not apply keeps the counts waiting
    assert counts(store.get_run(run_id)) == (2, 1, 1) and meter.waiting(run_id) == Tally(ddb_reads=1)
    seen = store.get_run(run_id).wake_seq
    assert store.suspend_run(run_id, Suspension(1, {"kind": "sleep"}), seen) is True
    meter.count(run_id, Tally(ddb_writes=2))
    woken = store.wake_run(run_id)
    assert woken is not None and counts(woken) == (3, 3, 1)
    meter.count(run_id, Tally(sqs_sends=2))
    assert store.claim_run(run_id, 1, "me", {}) is True
    meter.count(run_id, Tally(ddb_writes=1))
    ended = store.finish_run(run_id, RunEnding("completed", result="1", owner="me"))
    assert ended is not None and counts(ended) == (3, 4, 3) == counts(store.get_run(run_id))
    meter.count(run_id, Tally(ddb_reads=5))
    assert store.finish_run(run_id, RunEnding("failed", error="late")) is None
    assert counts(store.get_run(run_id)) == (3, 4, 3) and meter.take(run_id) == Tally(ddb_reads=5)


def test_continue_run_carries_the_counts_of_the_ended_run(store) -> None:  # type: ignore[no-untyped-def]
    from workflows.core.storage.metering import Tally, meter

    run_id = start(store)
    meter.count(run_id, Tally(ddb_reads=1, ddb_writes=2, sqs_sends=3))
    ended = store.continue_run(run_id, run_record(store))
    assert ended is not None and counts(ended) == (1, 2, 3) and not meter.waiting(run_id)
    assert counts(store.get_run(ended.continued_to)) == (0, 0, 0)


def test_count_runs_by_status_within_a_window_up_to_a_cap(store) -> None:  # type: ignore[no-untyped-def]
    base = 1e8 + uuid.uuid4().int % 10**6 * 10  # a window of its own: other tests' runs are not in it
    ids = [start(store, created_at=base + i) for i in range(5)]
    store.finish_run(ids[0], RunEnding("completed"))
    store.finish_run(ids[1], RunEnding("completed"))
    window = {"since": base, "until": base + 10}
    assert store.count_runs("pending", **window) == (3, False)
    assert store.count_runs("completed", **window) == (2, False)
    assert store.count_runs("failed", **window) == (0, False)
    assert store.count_runs("pending", since=base + 3, until=base + 4) == (2, False)
    assert store.count_runs("pending", **window, cap=2) == (2, True)
    assert store.count_runs("pending", **window, cap=3) == (3, False)


def test_run_summaries_come_from_the_listing_index(store) -> None:  # type: ignore[no-untyped-def]
    workflow, base = uid("wf"), store.now()
    ids = [start(store, workflow=workflow, created_at=base + i, schedule_id="s-1") for i in range(3)]
    store.finish_run(ids[0], RunEnding("failed", error="boom"))
    page = store.list_run_summaries(workflow=workflow, limit=2)
    assert [(s.run_id, s.workflow, s.status, s.created_at, s.schedule_id) for s in page] == [
        (ids[2], workflow, "pending", base + 2, "s-1"), (ids[1], workflow, "pending", base + 1, "s-1")]
    rest = store.list_run_summaries(workflow=workflow, limit=2, cursor=page.next_cursor)
    [oldest] = list(rest)
    assert oldest.run_id == ids[0] and oldest.status == "failed" and oldest.ended_at is not None
    by_status = store.list_run_summaries(status="failed", workflow=workflow)
    assert [(s.run_id, s.workflow) for s in by_status] == [(ids[0], workflow)]
