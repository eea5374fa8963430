"""Store contract: what versioning and forks add (the run's version stamp and fork link,
``defer_run``, ``copy_history``)."""

from __future__ import annotations

from workflows.core.model.records import EventRecord, RunEnding, event_seq
from workflows.core.storage.retention import write_expiry

from .retention_items import ttl_of
from .support import due_ids, run_record, start, timer, uid


def test_a_run_keeps_its_code_version_and_fork_link(store) -> None:  # type: ignore[no-untyped-def]
    record = run_record(store, code_version="2026.12.1", forked_from="orig", forked_at=4)
    assert store.create_run(record) == (record.run_id, True)
    run = store.get_run(record.run_id)
    assert (run.code_version, run.forked_from, run.forked_at) == ("2026.12.1", "orig", 4)
    plain = store.get_run(start(store))
    assert (plain.code_version, plain.forked_from, plain.forked_at) == (None, None, None)


def test_defer_run_suspends_without_a_lease_and_stores_its_timer(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.advance_run(run_id, 2, {"kind": "step", "name": "s"})
    seen = store.get_run(run_id)
    wake = timer(run_id, -1, store.now() + 5, kind="wake")
    assert store.defer_run(run_id, seen.wake_seq, wake)
    run = store.get_run(run_id)
    assert (run.status, run.cursor, run.waiting, run.lease_expires_at, run.recoveries) == (
        "suspended", 2, {"kind": "step", "name": "s"}, None, 0)
    assert run_id not in store.stale_runs(limit=1_000_000)
    clock.advance(5)
    assert due_ids(store, run_id) == {wake.timer_id}
    woken = store.wake_run(run_id)  # the timer's wake leases it again
    assert woken is not None and woken.lease_expires_at is not None


def test_defer_run_keeps_the_deferral_on_the_run_in_the_same_write(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    note = {"reason": "workflow 'w' is not registered", "since": 1.5, "count": 3, "next_at": 9.25,
            "wake_seq": 0, "cursor": -1}
    assert store.get_run(run_id).deferral is None
    assert store.defer_run(run_id, 0, timer(run_id, -1, store.now() + 5, kind="wake"), note)
    assert store.get_run(run_id).deferral == note
    store.wake_run(run_id)
    assert store.defer_run(run_id, 1, timer(run_id, -1, store.now() + 5, kind="wake"))  # no deferral: kept
    assert store.get_run(run_id).deferral == note


def test_defer_run_loses_to_a_wake_an_end_and_a_live_claim(store, clock) -> None:  # type: ignore[no-untyped-def]
    woken = start(store)
    store.wake_run(woken)
    assert not store.defer_run(woken, 0, timer(woken, -1, store.now() + 5, kind="wake"))
    assert store.get_run(woken).status == "pending"
    claimed = start(store)
    assert store.claim_run(claimed, 0, "resume-1", {"kind": "step", "name": "s"})
    assert not store.defer_run(claimed, 0, timer(claimed, -1, store.now() + 5, kind="wake"))
    assert store.get_run(claimed).lease_expires_at is not None
    clock.advance(1000)  # the claim's lease passed: its executor is gone
    assert store.defer_run(claimed, 0, timer(claimed, -1, store.now() + 5, kind="wake"))
    ended = start(store)
    assert store.finish_run(ended, RunEnding("failed", error="x")) is not None
    assert not store.defer_run(ended, 0, timer(ended, -1, store.now() + 5, kind="wake"))
    clock.advance(10)
    assert due_ids(store, woken) == due_ids(store, ended) == set()


def test_copy_history_writes_records_as_given_and_again(store) -> None:  # type: ignore[no-untyped-def]
    run_id = uid("fork")
    events = [EventRecord(run_id=run_id, seq=event_seq(pos), kind="step", status="completed", at=100.0 + pos,
                          name=f"s{pos}", data=str(pos)) for pos in range(30)]  # more than one batch
    store.copy_history(events)
    store.copy_history(events[:3])  # a retry writes the same records
    history = store.read_history(run_id)
    assert [(e.seq, e.name, e.data, e.at) for e in history] == [(e.seq, e.name, e.data, e.at) for e in events]
    store.copy_history([])
    assert store.get_outcome(run_id, 29) is not None and store.get_outcome(run_id, 30) is None
    until = write_expiry(store.now(), store.settings)  # copies expire from their write (orphans included)
    assert {ttl_of(i) for i in store.query_items("read", "history", run_id)} == {until}
