"""Store contract: delayed runs (created delayed without a lease, listed by status, parked again, woken)
and an end's timers (a parent's ``parent_close`` timer, written with the end)."""

from __future__ import annotations

from workflows.core.admission.delayed import start_timer
from workflows.core.model.records import RunEnding
from workflows.core.replay.children import close_timer

from .support import due_ids, run_record, start, timer, uid


def test_a_run_with_a_start_time_is_created_delayed_without_a_lease(store, clock) -> None:  # type: ignore[no-untyped-def]
    record = run_record(store, start_at=store.now() + 60)
    assert store.create_run(record, timers=[start_timer(record)]) == (record.run_id, True)
    run = store.get_run(record.run_id)
    assert (run.status, run.start_at, run.lease_expires_at) == ("delayed", record.start_at, None)
    assert record.run_id in {r.run_id for r in store.list_runs(status="delayed", limit=1000)}
    assert record.run_id in {r.run_id for r in store.list_run_summaries(status="delayed", limit=1000)}
    assert store.count_runs("delayed")[0] >= 1
    assert record.run_id not in store.stale_runs(limit=1000)  # no lease: the reconciler never sees it
    assert due_ids(store, record.run_id) == set()
    clock.advance(60)
    assert due_ids(store, record.run_id) == {f"{record.run_id}#start"}


def test_a_delayed_run_woken_early_is_parked_delayed_again(store, clock) -> None:  # type: ignore[no-untyped-def]
    record = run_record(store, start_at=store.now() + 60)
    store.create_run(record, timers=[start_timer(record)])
    woken = store.wake_run(record.run_id)  # a signal sent to it
    assert woken is not None and (woken.status, woken.wake_seq) == ("delayed", 1)
    assert woken.lease_expires_at is not None
    assert not store.defer_run(record.run_id, 0, start_timer(record), status="delayed")  # a stale read
    assert store.defer_run(record.run_id, 1, start_timer(record), status="delayed")
    run = store.get_run(record.run_id)
    assert (run.status, run.lease_expires_at, run.cursor) == ("delayed", None, -1)
    assert record.run_id in {r.run_id for r in store.list_runs(status="delayed", limit=1000)}


def test_an_end_writes_its_timers_with_it(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    closer = close_timer(run_id, "completed", store.now())
    ended = store.finish_run(run_id, RunEnding("completed", result="1", timers=[closer]))
    assert ended is not None and ended.status == "completed"
    assert due_ids(store, run_id) == {closer.timer_id}
    other = start(store)
    store.finish_run(other, RunEnding("failed", error="x"))
    # lost: nothing written
    assert store.finish_run(other,
                            RunEnding("completed", timers=[timer(other, 0, store.now())])) is None
    assert due_ids(store, other) == set()
    parent = uid("parent")
    child = start(store, parent_run_id=parent, parent_pos=0)  # its parent is not stored: the end goes alone
    assert store.finish_run(child, RunEnding("completed", wake=parent, timers=[close_timer(child, "completed", 0.0)]))
    assert due_ids(store, child) == {f"{child}#close"}
