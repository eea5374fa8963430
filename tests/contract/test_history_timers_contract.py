"""Store contract: history records, failed attempts, timers, and the item size limit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.contract.support import record_outcome
from workflows.core.model.records import EventRecord, HookRecord, RunEnding, TimerRecord, attempt_seq, event_seq
from workflows.errors import ItemTooLarge, StorageError

from .support import due_ids, start, timer, uid


def test_record_event_is_write_once_and_read_back(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    attempt = EventRecord(run_id=run_id, seq=attempt_seq(0, 1), kind="attempt", status="failed", at=store.now(),
                          name="a", error="boom", attempt=1, started_at=store.now() - 2)
    assert store.record_event(attempt) is True
    assert store.record_event(replace(attempt, error="other")) is False
    assert store.read_history(run_id) == [attempt]
    assert store.get_outcome(run_id, 0) is None  # an attempt is not the outcome
    clock.advance(1)
    assert record_outcome(store, run_id, 0, "step", "completed", name="a", data="1", attempt=2,
                                started_at=store.now() - 1) is True
    outcome = store.get_outcome(run_id, 0)
    assert outcome is not None and outcome.is_outcome and outcome.seq == event_seq(0)
    assert (outcome.at, outcome.data, outcome.attempt, outcome.error) == (store.now(), "1", 2, None)
    assert store.read_history(run_id) == [attempt, outcome]
    assert store.record_event(EventRecord(run_id=run_id, seq=event_seq(1), kind="sleep", status="completed", at=0))
    assert store.get_outcome(run_id, 1).at == store.now()  # type: ignore[union-attr]  # no time given: now


def test_read_history_after_seq(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    for pos in (2, 0, 1):
        record_outcome(store, run_id, pos, "step", "completed", data=str(pos))
    store.record_event(EventRecord(run_id=run_id, seq=attempt_seq(1, 3), kind="attempt", status="failed", at=1.0))
    assert [e.seq for e in store.read_history(run_id)] == [999, 1003, 1999, 2999]
    assert [e.seq for e in store.read_history(run_id, after_seq=event_seq(0), page_size=1)] == [1003, 1999, 2999]
    assert store.read_history(run_id, after_seq=event_seq(2)) == []
    assert store.read_history(uid()) == []
    assert [e.seq for e in store.read_history(run_id, after_seq=event_seq(0), until_seq=event_seq(1))] == [1003, 1999]
    assert [e.seq for e in store.read_history(run_id, after_seq=1002, until_seq=1003, page_size=1)] == [1003]
    assert store.read_history(run_id, after_seq=1003, until_seq=1998) == []


def test_an_attempt_is_recorded_while_its_run_is_live_only(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)

    def failed(partition: str, attempt: int) -> EventRecord:
        return EventRecord(run_id=partition, seq=attempt_seq(0, attempt), kind="attempt", status="failed", at=1.0,
                           name="s", error=f"attempt {attempt}", attempt=attempt)

    assert store.record_attempt(failed(run_id, 1), while_live=run_id) is True
    assert store.record_attempt(failed(f"{run_id}#3", 1), while_live=run_id) is True  # a branch's, in its join
    assert store.record_attempt(failed(run_id, 1), while_live=run_id) is False  # the slot holds it
    store.finish_run(run_id, RunEnding("cancelled"))
    assert store.record_attempt(failed(run_id, 2), while_live=run_id) is False
    assert store.record_attempt(failed(f"{run_id}#3", 2), while_live=run_id) is False
    assert store.record_attempt(failed(run_id, 2), while_live=uid()) is False  # no such run
    assert [e.attempt for e in store.read_history(run_id)] == [1]
    assert [e.attempt for e in store.read_history(f"{run_id}#3")] == [1]


def test_branch_attempts_have_slots_of_their_own_in_the_join_history(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    join = f"{run_id}#4"

    def failed(index: int, attempt: int) -> EventRecord:
        return EventRecord(run_id=join, seq=attempt_seq(index, attempt), kind="attempt", status="failed", at=1.0,
                           name="b", error=f"attempt {attempt}", attempt=attempt)

    assert [store.record_attempt(failed(index, 1)) for index in (0, 1, 0)] == [True, True, False]
    assert store.record_attempt(failed(1, 998)) is True
    assert store.record_attempt(failed(1, 1000)) is True
    assert store.record_attempt(failed(1, 999)) is False  # the shared last slot keeps the latest attempt
    assert [(e.pos, e.attempt) for e in store.read_history(join)] == [(0, 1), (1, 1), (1, 1000)]
    assert store.read_history(run_id) == []  # never part of the run's own history


def test_schedule_retry_is_one_transaction(store, clock) -> None:  # type: ignore[no-untyped-def]
    lease = store.settings.lease_seconds
    run_id = start(store)
    store.advance_run(run_id, 0, {})
    retry = timer(run_id, 0, store.now() + 40, kind="retry")
    assert store.schedule_retry(retry, 40) is True
    assert store.get_run(run_id).lease_expires_at == store.lease_until(40 + lease)
    assert store.schedule_retry(timer(run_id, 0, store.now() + 5, kind="wake"), 5) is True
    assert store.get_run(run_id).lease_expires_at == store.lease_until(5 + lease)
    store.finish_run(run_id, RunEnding("failed"))
    assert store.schedule_retry(timer(run_id, 1, store.now() + 1, kind="retry"), 1) is False
    assert store.schedule_retry(timer(uid(), 1, store.now(), kind="retry"), 1) is False
    assert store.read_history(run_id) == []
    clock.advance(100)
    assert due_ids(store, run_id) == {retry.timer_id, f"{run_id}#0#wake"}  # nothing of the refused ones


def test_timer_is_never_due_early(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = uid()
    sleep = TimerRecord(timer_id=f"{run_id}#0#sleep", kind="sleep", run_id=run_id, due_at=store.now() + 10,
                        pos=0, data='{"x":1}')
    store.put_timer(sleep)
    assert due_ids(store, run_id) == set()
    clock.advance(9.5)
    assert due_ids(store, run_id) == set()
    clock.time = sleep.due_at
    assert [t for t in store.due_timers(limit=1_000_000) if t.run_id == run_id] == [sleep]
    store.put_timer(replace(sleep, due_at=store.now() + 60))  # replaced: due later
    assert due_ids(store, run_id) == set()
    deadline = TimerRecord(timer_id=f"{run_id}#deadline", kind="deadline", run_id=run_id, due_at=store.now())
    store.put_timer(deadline)
    assert [t for t in store.due_timers(limit=1_000_000) if t.run_id == run_id] == [deadline]  # pos None


def test_claim_timer_once_and_delete_missing(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = uid()
    timers = [timer(run_id, i, store.now()) for i in range(5)]
    for t in timers:
        store.put_timer(t)
    assert len(store.due_timers(limit=3)) == 3
    assert len(store.due_timers(limit=3, page_size=1)) == 3
    assert store.claim_timer(timers[0].timer_id) is True
    assert store.claim_timer(timers[0].timer_id) is False
    store.delete_timer(timers[1].timer_id)
    store.delete_timer(timers[1].timer_id)  # missing: fine
    assert store.claim_timer(timers[1].timer_id) is False
    assert [store.claim_timer(timers[2].timer_id) for _ in range(4)] == [True, False, False, False]
    # A claimed timer stays until its claimer deletes it; if the claimer died, the next
    # sweep after the lease takes it.
    assert due_ids(store, run_id) == {timers[0].timer_id, timers[2].timer_id, timers[3].timer_id, timers[4].timer_id}
    store.delete_timer(timers[0].timer_id)
    clock.advance(store.settings.lease_seconds + 1)
    assert store.claim_timer(timers[2].timer_id) is True and store.claim_timer(timers[2].timer_id) is False
    store.delete_timer(timers[2].timer_id)
    assert due_ids(store, run_id) == {timers[3].timer_id, timers[4].timer_id}


def test_a_timer_is_claimed_only_as_the_version_read(store, clock) -> None:  # type: ignore[no-untyped-def]
    """A sweep that read a retry timer must not consume the next retry written under its id."""
    run_id = uid()
    store.put_timer(timer(run_id, 0, store.now()))
    read = store.due_timers(limit=500)
    old = next(t for t in read if t.run_id == run_id)
    store.put_timer(timer(run_id, 0, store.now()))  # the run's next retry, same id
    assert store.claim_timer(old.timer_id, write_id=old.write_id) is False
    assert due_ids(store, run_id) == {old.timer_id}
    new = next(t for t in store.due_timers(limit=500) if t.run_id == run_id)
    assert store.claim_timer(new.timer_id, write_id=new.write_id) is True
    assert store.claim_timer(new.timer_id, write_id=new.write_id) is False
    store.delete_timer(new.timer_id, write_id=new.write_id)
    assert due_ids(store, run_id) == set()


def test_oversize_fields_are_refused_before_any_write(store, clock) -> None:  # type: ignore[no-untyped-def]
    big = "x" * 500_000
    run_id = start(store)
    store.advance_run(run_id, 0, {})
    lease = store.get_run(run_id).lease_expires_at
    with pytest.raises(ItemTooLarge):
        store.put_timer(timer(run_id, 0, store.now(), data=big))
    failed = EventRecord(run_id=run_id, seq=attempt_seq(0, 1), kind="attempt", status="failed", at=store.now(),
                         error=big, attempt=1)
    with pytest.raises(ItemTooLarge):
        store.record_attempt(failed)
    with pytest.raises(ItemTooLarge):
        store.record_branch(f"{run_id}#0", 0, big, None)
    with pytest.raises(ItemTooLarge):
        store.put_signal(run_id, "go", big)
    assert store.get_run(run_id).lease_expires_at == lease
    assert store.read_history(run_id) == [] and store.branch_results(f"{run_id}#0") == []
    assert store.signals(run_id, "go") == [] and due_ids(store, run_id) == set()


def test_item_over_400kb_is_refused_by_the_table(store) -> None:  # type: ignore[no-untyped-def]
    # Fields the store does not check itself: the table refuses the item. (Whether the write
    # applied is not promised after a StorageError; moto applies such an update, DynamoDB does not.)
    run_id = start(store)
    with pytest.raises(StorageError):
        store.advance_run(run_id, 0, {"blob": "x" * 450_000})
    hook = HookRecord(token_hash=uid("h"), run_id=run_id, pos=1, name="h", status="pending", created_at=store.now(),
                      schema="s" * 420_000)
    with pytest.raises(StorageError):
        store.create_hook(hook, None, run_id, 1, "{}")
