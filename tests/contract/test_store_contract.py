"""The store contract: every Store behaves the same (see conftest: DynamoDB over moto, and memory)."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.contract.support import record_outcome
from workflows.core.model.records import (
    EventRecord,
    HookRecord,
    RunEnding,
    RunRecord,
    Suspension,
    TimerRecord,
    event_seq,
)
from workflows.core.ops.waits import hash_token
from workflows.errors import HookAlreadyResumed, HookExpired, HookNotFound, ItemTooLarge, RunNotFound


def new_run(store, key: str | None = None, run_id: str | None = None) -> tuple[str, bool]:
    record = RunRecord(run_id=run_id or str(uuid.uuid4()), workflow="wf", status="pending",
                       created_at=store.now(), args="[[],{}]", idempotency_key=key)
    return store.create_run(record)


def test_duplicate_outcome_write_is_rejected(store) -> None:
    run_id, _ = new_run(store)
    assert record_outcome(store, run_id, 0, "step", "completed", name="a", data="1") is True
    assert record_outcome(store, run_id, 0, "step", "completed", name="a", data="2") is False
    events = store.read_history(run_id)
    assert [(e.pos, e.data) for e in events] == [(0, "1")]


def test_twenty_concurrent_starts_with_one_key_make_one_run(store) -> None:
    key = f"key-{uuid.uuid4()}"
    barrier = threading.Barrier(20)

    def start(_: int) -> tuple[str, bool]:
        barrier.wait()
        return new_run(store, key=key)

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(start, range(20)))
    run_ids = {run_id for run_id, _ in results}
    assert len(run_ids) == 1
    assert sum(created for _, created in results) == 1
    assert store.get_run(run_ids.pop()).idempotency_key == key


def test_same_run_id_is_created_once(store) -> None:
    run_id = str(uuid.uuid4())
    assert new_run(store, run_id=run_id) == (run_id, True)
    assert new_run(store, run_id=run_id) == (run_id, False)


def test_join_of_fifty_branches_delivered_twice_fires_once(store) -> None:
    run_id, _ = new_run(store)
    join = f"{run_id}#3"
    total = 50
    winners: list[int] = []
    lock = threading.Lock()

    def complete(index: int) -> None:
        store.record_branch(join, index, str(index * 10), None)
        if store.join_branch(join, index, total) and record_outcome(store, run_id, 3, "parallel", "completed"):
            with lock:
                winners.append(index)

    deliveries = [i for i in range(total)] * 2
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(complete, deliveries))
    assert len(winners) == 1
    results = store.branch_results(join)
    assert [r.index for r in results] == list(range(total))
    assert [r.data for r in results] == [str(i * 10) for i in range(total)]
    counters = store.join_items(join)
    assert sum(len(c.done) for c in counters) == total


def test_sharded_join_of_250_branches_fires_once(store) -> None:
    run_id, _ = new_run(store)
    join = f"{run_id}#0"
    redelivered = [0, 1, 99, 100, 150, 199, 200, 248, 249]  # every shard's first, middle and last branches
    fired = [i for i in [*range(250), *redelivered] if store.join_branch(join, i, 250)]
    # Every delivery after completion reports completion; the outcome write picks one resumer.
    assert fired == [249, *redelivered]
    assert sum(record_outcome(store, run_id, 0, "parallel", "completed") for _ in fired) == 1


def test_history_spanning_pages_is_read_whole(store) -> None:
    run_id, _ = new_run(store)
    for pos in range(45):
        record_outcome(store, run_id, pos, "step", "completed", name=f"s{pos}", data=str(pos))
    events = store.read_history(run_id, page_size=7)
    assert [e.pos for e in events] == list(range(45))
    later = store.read_history(run_id, after_seq=event_seq(39), page_size=2)
    assert [e.pos for e in later] == list(range(40, 45))


def test_due_timers_spanning_pages_are_all_returned(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = f"timers-{uuid.uuid4()}"
    now = store.now() + 3600
    for i in range(30):
        store.put_timer(TimerRecord(timer_id=f"{run_id}#{i}#sleep", kind="sleep", run_id=run_id, due_at=now, pos=i))
    store.put_timer(TimerRecord(timer_id=f"{run_id}#99#sleep", kind="sleep", run_id=run_id, due_at=now + 7200, pos=99))
    clock.advance(7200)  # the 30 are due, the last one is not
    due = [t for t in store.due_timers(limit=10_000, page_size=3) if t.run_id == run_id]
    assert sorted(t.pos for t in due) == list(range(30))
    for t in due:
        store.delete_timer(t.timer_id)
    assert store.claim_timer(f"{run_id}#99#sleep") is True
    assert store.claim_timer(f"{run_id}#99#sleep") is False


def test_hook_lookup_by_token_and_single_use(store) -> None:
    run_id, _ = new_run(store)
    token = "secret-token-" + uuid.uuid4().hex
    hook = HookRecord(token_hash=hash_token(token), run_id=run_id, pos=1, name="approve", status="pending",
                      created_at=store.now(), expires_at=store.now() + 60)
    event = store.create_hook(hook, None, run_id, 1, '{"token": "x"}')
    assert event.kind == "hook"
    found = store.get_hook(hash_token(token))
    assert found is not None and found.run_id == run_id and found.name == "approve"
    assert store.complete_hook(hash_token(token), '{"ok": true}').status == "resumed"
    with pytest.raises(HookAlreadyResumed):
        store.complete_hook(hash_token(token), '{"ok": false}')
    assert store.get_hook(hash_token(token)).payload == '{"ok": true}'
    with pytest.raises(HookNotFound):
        store.complete_hook(hash_token("nope"), "{}")


def test_expired_hook_is_refused(store) -> None:
    run_id, _ = new_run(store)
    hook = HookRecord(token_hash=hash_token("t-" + run_id), run_id=run_id, pos=0, name="h", status="pending",
                      created_at=store.now(), expires_at=store.now() - 1)
    store.create_hook(hook, None, run_id, 0, "{}")
    with pytest.raises(HookExpired):
        store.complete_hook(hash_token("t-" + run_id), "{}")


def test_run_lifecycle_conditions(store) -> None:
    run_id, _ = new_run(store)
    assert store.advance_run(run_id, 0, {"kind": "step", "name": "a"}) is True
    assert store.advance_run(run_id, 0, {"kind": "step", "name": "a"}) is False  # a second resume loses
    run = store.get_run(run_id)
    assert run.status == "running" and run.cursor == 0
    assert store.suspend_run(run_id, Suspension(1, {"kind": "sleep"}), run.wake_seq + 1) is False
    assert store.suspend_run(run_id, Suspension(1, {"kind": "sleep"}), run.wake_seq) is True
    woken = store.wake_run(run_id)
    assert woken is not None and woken.wake_seq == run.wake_seq + 1 and woken.status == "suspended"
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    assert store.finish_run(run_id, RunEnding("failed", error="late")) is None
    assert store.get_run(run_id).status == "completed"
    with pytest.raises(RunNotFound):
        store.get_run("missing-" + run_id)


def test_oversize_item_is_refused_before_the_request(store) -> None:
    run_id, _ = new_run(store)
    with pytest.raises(ItemTooLarge) as info:
        store.record_event(EventRecord(run_id=run_id, seq=event_seq(0), kind="step", status="completed",
                                       at=store.now(), data="x" * 500_000))
    assert info.value.field == "data"
    assert store.read_history(run_id) == []


def test_runs_listed_by_status_and_workflow_with_cursor(store) -> None:
    workflow = f"wf-{uuid.uuid4().hex[:6]}"
    ids = []
    for _ in range(5):
        record = RunRecord(run_id=str(uuid.uuid4()), workflow=workflow, status="pending", created_at=time.time(),
                           args="[[],{}]")
        ids.append(store.create_run(record)[0])
    seen, cursor = [], None
    while True:
        page = store.list_runs(workflow=workflow, limit=2, cursor=cursor)
        seen += [r.run_id for r in page]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert sorted(seen) == sorted(ids)
    assert all(r.workflow == workflow for r in store.list_runs(status="pending", workflow=workflow, limit=50))
