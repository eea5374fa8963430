"""Store contract: schedules, their due index, fire claims and running-run bookkeeping."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from workflows.core.model.records import Advance, ScheduleRecord, chain_key
from workflows.errors import ItemTooLarge, ScheduleAlreadyExists, ScheduleNotFound, SerializationError

from .support import due_schedule_ids, schedule, uid


def test_create_get_and_duplicate(store) -> None:  # type: ignore[no-untyped-def]
    created = schedule(store, catchup_window=30.0, args="[[1],{}]", declared=True, jitter=2.0)
    assert (created.revision, created.fired, created.skipped, created.running, created.buffered, created.heads) == (
        1, 0, 0, [], [], {})
    assert created.due_at == created.next_due_at == created.next_fire_at + 2  # type: ignore[operator]
    assert (created.created_at, created.updated_at, created.pending) == (store.now(), store.now(), None)
    assert store.get_schedule(created.schedule_id) == created
    with pytest.raises(ScheduleAlreadyExists):
        store.create_schedule(replace(created, workflow="other"))
    assert store.get_schedule(created.schedule_id).workflow == created.workflow
    missing = uid("s")
    with pytest.raises(ScheduleNotFound):
        store.get_schedule(missing)
    assert store.find_schedule(missing) is None
    other = schedule(store)
    found = store.get_schedules([other.schedule_id, missing, created.schedule_id, other.schedule_id])
    assert [s.schedule_id for s in found] == [other.schedule_id, created.schedule_id]
    assert store.get_schedules([]) == []
    with pytest.raises(ItemTooLarge):
        store.create_schedule(ScheduleRecord(schedule_id=missing, workflow="wf", spec={}, overlap="skip",
                                             args="x" * 500_000))
    assert store.find_schedule(missing) is None


def test_list_schedules_sorted_by_id_with_cursor(store) -> None:  # type: ignore[no-untyped-def]
    workflow = uid("wf")
    ids = [uid("s") for _ in range(5)]
    for sid in ids:
        schedule(store, schedule_id=sid, workflow=workflow)
    store.pause_schedule(ids[2])
    seen, cursor = [], None
    while True:
        page = store.list_schedules(workflow=workflow, limit=2, cursor=cursor)
        assert len(page) <= 2
        seen += [s.schedule_id for s in page]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == sorted(ids)
    assert [s.schedule_id for s in store.list_schedules(workflow=workflow, state="paused")] == [ids[2]]
    assert len(store.list_schedules(workflow=workflow, state="active", limit=50)) == 4
    for bad in ("garbage", base64.urlsafe_b64encode(b'{"kind": {"S": "schedule"}}').decode()):
        with pytest.raises(SerializationError):
            store.list_schedules(cursor=bad)


def test_update_schedule_with_version(store, clock) -> None:  # type: ignore[no-untyped-def]
    sid = schedule(store, catchup_window=10.0).schedule_id
    fire = store.now() + 30
    clock.advance(1)
    assert store.update_schedule(sid, 1, {"spec": {"every": 30}, "catchup_window": None, "args": "[[2],{}]"},
                                 reschedule=(fire, fire + 1), active=True, seen_pending=False) is True
    updated = store.get_schedule(sid)
    assert (updated.revision, updated.spec, updated.catchup_window, updated.args) == (
        2, {"every": 30}, None, "[[2],{}]")
    assert (updated.next_fire_at, updated.next_due_at, updated.due_at, updated.updated_at) == (
        fire, fire + 1, fire + 1, store.now())
    assert store.update_schedule(sid, 1, {"overlap": "allow"}, reschedule=None, active=True,
                                 seen_pending=False) is False  # stale version
    assert store.update_schedule(sid, 2, {"overlap": "allow"}, reschedule=None, active=True,
                                 seen_pending=True) is False  # no claim is open
    assert store.get_schedule(sid) == updated
    assert store.update_schedule(sid, 2, {"overlap": "allow"}, reschedule=(None, None), active=True,
                                 seen_pending=False) is True
    ended = store.get_schedule(sid)
    recheck = store.now() + min(store.settings.lease_seconds, 60.0)  # beat looks after its last runs, then drops it
    assert (ended.overlap, ended.next_fire_at, ended.due_at, ended.revision) == ("allow", None, recheck, 3)
    assert store.recheck_schedule(sid, keep=False) is not None
    assert sid not in due_schedule_ids(store, store.now() + 10_000)
    assert store.update_schedule(uid("s"), 1, {}, reschedule=None, active=True, seen_pending=False) is False


def test_update_with_an_open_claim_makes_it_due_now(store, clock) -> None:  # type: ignore[no-untyped-def]
    fire = store.now()
    sid = schedule(store, next_fire=fire).schedule_id
    store.claim_fire(sid, fire, uid(), lease_until=fire + 60, advance=Advance(fire, fire + 60, fire + 60))
    clock.advance(5)
    assert store.update_schedule(sid, 1, {"spec": {"every": 10}}, reschedule=(fire + 10, fire + 10), active=True,
                                 seen_pending=True) is True
    updated = store.get_schedule(sid)
    assert (updated.pending, updated.due_at, updated.next_fire_at) == (fire, store.now(), fire + 10)
    assert sid in due_schedule_ids(store)


def test_pause_resume_and_delete(store, clock) -> None:  # type: ignore[no-untyped-def]
    sid = schedule(store, next_fire=store.now() - 1).schedule_id
    assert sid in due_schedule_ids(store)
    paused = store.pause_schedule(sid)
    assert (paused.state, paused.revision) == ("paused", 2)
    assert sid not in due_schedule_ids(store)
    with pytest.raises(ScheduleNotFound):
        store.pause_schedule(uid("s"))
    fire = store.now() + 5
    unpaused = store.unpause_schedule(sid, next_fire=fire, next_due=fire, seen_pending=False)
    assert unpaused is not None and (unpaused.state, unpaused.revision, unpaused.due_at) == ("active", 3, fire)
    assert store.unpause_schedule(sid, next_fire=fire, next_due=fire, seen_pending=False) is None  # not paused
    clock.time = fire
    assert sid in due_schedule_ids(store)
    assert store.delete_schedule(sid) is True
    assert store.delete_schedule(sid) is False
    assert store.find_schedule(sid) is None and sid not in due_schedule_ids(store)


def test_due_schedules_never_early(store, clock) -> None:  # type: ignore[no-untyped-def]
    fire = store.now() + 10
    sid = schedule(store, next_fire=fire, jitter=2).schedule_id
    assert sid not in due_schedule_ids(store)
    assert sid not in due_schedule_ids(store, fire + 1)
    assert sid in due_schedule_ids(store, fire + 2)
    clock.time = fire + 2
    assert sid in due_schedule_ids(store)
    for _ in range(3):
        schedule(store, next_fire=store.now())
    assert len(store.due_schedules(limit=2)) == 2
    assert len(store.due_schedules(limit=2, page_size=1)) == 2


def test_claim_fire_once(store) -> None:  # type: ignore[no-untyped-def]
    fire = store.now()
    sid = schedule(store, next_fire=fire).schedule_id
    advance = Advance(fire, fire + 60, fire + 61)
    claims = [store.claim_fire(sid, fire, f"run-{i}", lease_until=fire + 30, advance=advance) for i in range(4)]
    assert claims[0] is not None and claims[1:] == [None] * 3  # one beat wins
    won = claims[0]
    assert (won.pending, won.running, won.fired, won.due_at, won.last_fire_at) == (fire, [fire], 1, fire + 30, fire)
    assert (won.next_fire_at, won.next_due_at) == (fire + 60, fire + 61)
    assert won.last_run_id == "run-0"
    assert store.get_schedule(sid) == won
    assert sid in due_schedule_ids(store, fire + 30)  # an open claim is due at its lease
    assert store.renew_claim(sid, fire, fire + 30, fire + 90) is True
    assert store.renew_claim(sid, fire, fire + 30, fire + 120) is False  # another taker renewed it
    assert store.renew_claim(sid, fire + 1, fire + 90, fire + 120) is False
    finished = store.finish_fire(sid, fire)
    assert finished is not None and (finished.pending, finished.due_at, finished.last_error) == (None, fire + 61, None)
    assert finished.running == [fire]  # the run goes on
    assert store.finish_fire(sid, fire) is None


def test_manual_fire_leaves_the_next_fire_alone(store) -> None:  # type: ignore[no-untyped-def]
    created = schedule(store)
    fire = store.now() - 100
    claimed = store.claim_fire(created.schedule_id, fire, "manual", lease_until=store.now() + 30)
    assert claimed is not None
    assert (claimed.next_fire_at, claimed.last_fire_at, claimed.running, claimed.pending) == (
        created.next_fire_at, None, [fire], fire)
    assert store.claim_fire(created.schedule_id, fire + 1, "again", lease_until=store.now() + 30) is None  # claim open
    assert store.claim_fire(uid("s"), fire, "missing", lease_until=store.now()) is None


def test_overlap_bookkeeping(store) -> None:  # type: ignore[no-untyped-def]
    f = store.now()
    sid = schedule(store, next_fire=f).schedule_id
    assert store.skip_fire(sid, advance=Advance(f, f + 60, f + 60)) is None  # nothing runs
    store.claim_fire(sid, f, "run-1", lease_until=f + 30, advance=Advance(f, f + 60, f + 60))
    claim_open = store.buffer_fire(sid, f + 60, advance=Advance(f + 60, f + 120, f + 120))
    assert claim_open is None
    store.finish_fire(sid, f)
    on = Advance(f + 60, f + 120, f + 120)
    assert store.claim_fire(sid, f + 60, "run-2", lease_until=f + 90, advance=on, when_idle=True) is None  # a run runs
    skipped = store.skip_fire(sid, advance=Advance(f + 60, f + 120, f + 120))
    assert skipped is not None and (skipped.skipped, skipped.next_fire_at, skipped.due_at) == (1, f + 120, f + 120)
    assert store.skip_fire(sid, advance=Advance(f + 60, f + 120, f + 120)) is None  # moved on
    buffered = store.buffer_fire(sid, f + 120, advance=Advance(f + 120, f + 180, f + 180))
    assert buffered is not None and (buffered.buffered, buffered.last_fire_at) == ([f + 120], f + 120)
    assert store.buffer_fire(sid, f + 180, advance=Advance(f + 180, f + 240, f + 240),
                             only_first=True) is None  # one is buffered already
    assert store.buffer_fire(sid, f + 180, advance=Advance(f + 180, f + 240, f + 240),
                             replace=False) is None
    newest = store.buffer_fire(sid, f + 180, advance=Advance(f + 180, f + 240, f + 240), replace=True)
    assert newest is not None and (newest.buffered, newest.skipped) == ([f + 180], 2)
    assert store.advance_chain(sid, f, "run-1b") is True
    assert store.get_schedule(sid).heads == {chain_key(f): "run-1b"}
    assert store.advance_chain(sid, f + 999, "nope") is False  # that fire does not run
    assert store.promote_buffered(sid, f + 180, "run-3", lease_until=f + 300) is None  # run-1 still runs
    released = store.release_fire(sid, f)
    assert released is not None and (released.running, released.heads) == ([], {})
    assert store.release_fire(sid, f) == released  # idempotent
    assert store.promote_buffered(sid, f + 120, "run-x", lease_until=f + 300) is None  # not the buffered fire
    promoted = store.promote_buffered(sid, f + 180, "run-3", lease_until=f + 300)
    assert promoted is not None
    assert (promoted.running, promoted.buffered, promoted.pending, promoted.fired, promoted.due_at) == (
        [f + 180], [], f + 180, 2, f + 300)
    failed = store.finish_fire(sid, f + 180, error="E" * 3000)
    assert failed is not None and (failed.running, failed.last_error, failed.due_at) == ([], "E" * 2000, f + 240)
    assert store.release_fire(uid("s"), f) is None


def test_a_schedule_without_a_next_fire_stays_due_while_its_runs_need_looking_after(store) -> None:  # type: ignore[no-untyped-def]
    """Its last run's end (or a buffered fire) must not depend on a run-end listener alone."""
    f = store.now()
    recheck = f + min(store.settings.lease_seconds, 60.0)
    sid = schedule(store, next_fire=f).schedule_id
    store.claim_fire(sid, f, "last", lease_until=f + 30, advance=Advance(f, None, None))
    assert store.recheck_schedule(sid, keep=False) is None  # a claim is open
    finished = store.finish_fire(sid, f)
    assert finished is not None and (finished.next_fire_at, finished.due_at, finished.pending) == (None, recheck, None)
    assert sid in due_schedule_ids(store, recheck)
    assert store.recheck_schedule(sid, keep=True).due_at == recheck
    assert store.recheck_schedule(sid, keep=False) is not None
    assert sid not in due_schedule_ids(store, f + 1_000_000)
    assert store.recheck_schedule(uid("s"), keep=False) is None


def test_buffer_adds_fires_without_replace(store) -> None:  # type: ignore[no-untyped-def]
    f = store.now()
    sid = schedule(store, next_fire=f + 1000).schedule_id
    store.claim_fire(sid, f, "manual", lease_until=f + 30)
    store.finish_fire(sid, f)
    for fire in (f + 2, f + 1, f + 2):
        assert store.buffer_fire(sid, fire) is not None  # manual fires, kept as a number set
    record = store.get_schedule(sid)
    assert (record.buffered, record.next_fire_at, record.last_fire_at) == ([f + 1, f + 2], f + 1000, None)
    store.pause_schedule(sid)
    assert store.promote_buffered(sid, f + 1, "r", lease_until=f + 60) is None  # paused
