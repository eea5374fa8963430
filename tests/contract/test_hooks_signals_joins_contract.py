"""Store contract: hooks, signals and fan-in joins."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from workflows.core.model.embed import embed
from workflows.core.model.records import HookRecord, RunEnding, SignalRecord, event_seq
from workflows.core.ops.waits import hash_token
from workflows.core.replay.updates import REQUEST_NAME, request_key
from workflows.errors import HookAlreadyResumed, HookClosed, HookExpired, HookNotFound, ItemTooLarge

from .support import due_ids, start, timer, uid


def hook_record(store, run_id: str, pos: int, ttl: float | None = 60.0, name: str = "approve") -> HookRecord:  # type: ignore[no-untyped-def]
    return HookRecord(token_hash=hash_token(uid("token")), run_id=run_id, pos=pos, name=name, status="pending",
                      created_at=store.now(), expires_at=None if ttl is None else store.now() + ttl,
                      schema='{"type":"object"}')


def test_create_hook_stores_hook_timer_and_outcome(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    hook = replace(hook_record(store, run_id, 2), payload="not stored")
    expiry = timer(run_id, 2, hook.expires_at, kind="hook_timeout", data=hook.token_hash)  # type: ignore[arg-type]
    event = store.create_hook(hook, expiry, run_id, 2, '{"token":"t"}')
    assert (event.kind, event.status, event.seq, event.name, event.data) == (
        "hook", "created", event_seq(2), "approve", '{"token":"t"}')
    assert store.get_outcome(run_id, 2) == event
    assert store.get_hook(hook.token_hash) == replace(hook, payload=None)
    clock.advance(60)
    assert due_ids(store, run_id) == {expiry.timer_id}


def test_create_hook_writes_nothing_once_the_run_ended(store, clock) -> None:  # type: ignore[no-untyped-def]
    """A resume that replays up to a hook after a cancel ended the run records nothing."""
    run_id = start(store)
    store.finish_run(run_id, RunEnding("cancelled", error="cancelled"))
    hook = hook_record(store, run_id, 0)
    expiry = timer(run_id, 0, hook.expires_at, kind="hook_timeout", data=hook.token_hash)  # type: ignore[arg-type]
    assert store.create_hook(hook, expiry, run_id, 0, '{"token":"t"}') is None
    assert (store.get_outcome(run_id, 0), store.get_hook(hook.token_hash)) == (None, None)
    clock.advance(120)
    assert due_ids(store, run_id) == set()


def test_create_hook_replayed_returns_the_recorded_outcome(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    first_hook, other_hook = hook_record(store, run_id, 0), hook_record(store, run_id, 0)
    first = store.create_hook(first_hook, None, run_id, 0, '{"token":"first"}')
    clock.advance(1)
    other_timer = timer(run_id, 0, store.now(), kind="hook_timeout")
    assert store.create_hook(other_hook, other_timer, run_id, 0, '{"token":"other"}') == first
    assert store.create_hook(first_hook, None, run_id, 0, '{"token":"first"}') == first
    assert store.get_hook(other_hook.token_hash) is None  # the losing transaction wrote nothing
    assert due_ids(store, run_id) == set()


def test_complete_hook_exactly_once(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    hook = hook_record(store, run_id, 0, ttl=None)
    store.create_hook(hook, None, run_id, 0, "{}")
    assert store.complete_hook(hook.token_hash, '"first"').status == "resumed"
    for attempt in range(3):
        with pytest.raises(HookAlreadyResumed):
            store.complete_hook(hook.token_hash, json.dumps(attempt))
    resumed = store.get_hook(hook.token_hash)
    assert (resumed.status, resumed.completed_at, resumed.payload) == ("resumed", store.now(), '"first"')


def test_hook_expiry_boundary(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    hook = hook_record(store, run_id, 0, ttl=10)
    store.create_hook(hook, None, run_id, 0, "{}")
    clock.time = hook.expires_at  # expired at its expiry time
    with pytest.raises(HookExpired):
        store.complete_hook(hook.token_hash, "{}")
    assert store.get_hook(hook.token_hash).status == "pending"  # refused, not changed
    assert store.expire_hook(hook.token_hash) is True
    assert store.expire_hook(hook.token_hash) is False
    assert store.expire_hook(hash_token(uid("missing"))) is False
    with pytest.raises(HookExpired):
        store.complete_hook(hook.token_hash, "{}")


def test_hooks_for_run_and_close_hooks(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    hooks = {pos: hook_record(store, run_id, pos, name=f"h{pos}") for pos in (3, 1, 0, 2)}
    for pos, hook in hooks.items():
        store.create_hook(hook, None, run_id, pos, "{}")
    store.complete_hook(hooks[1].token_hash, '{"ok":true}')
    assert store.expire_hook(hooks[2].token_hash) is True
    assert store.expire_hook(hooks[1].token_hash) is False  # resumed first
    listed = store.hooks_for_run(run_id)
    assert [(h.pos, h.status) for h in listed] == [(0, "pending"), (1, "resumed"), (2, "expired"), (3, "pending")]
    assert listed[1].payload == '{"ok":true}'
    store.finish_run(run_id, RunEnding("completed"))
    assert store.close_hooks(run_id) == 2
    assert store.close_hooks(run_id) == 0
    assert [h.status for h in store.hooks_for_run(run_id)] == ["closed", "resumed", "expired", "closed"]
    with pytest.raises(HookClosed):
        store.complete_hook(hooks[0].token_hash, "{}")
    with pytest.raises(HookAlreadyResumed):
        store.complete_hook(hooks[1].token_hash, "{}")
    with pytest.raises(HookExpired):
        store.complete_hook(hooks[2].token_hash, "{}")
    with pytest.raises(HookNotFound):
        store.complete_hook(hash_token(uid("missing")), "{}")
    assert store.hooks_for_run(uid()) == [] and store.close_hooks(uid()) == 0


def test_oversize_hook_payload_is_refused(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    hook = hook_record(store, run_id, 0)
    store.create_hook(hook, None, run_id, 0, "{}")
    with pytest.raises(ItemTooLarge):
        store.complete_hook(hook.token_hash, "x" * 500_000)
    assert store.get_hook(hook.token_hash).status == "pending"


def test_signals_are_kept_in_send_order_per_name(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    sent = []
    for i in range(6):
        sent.append(store.put_signal(run_id, "go" if i % 2 == 0 else "stop", json.dumps(i)))
        clock.advance(0.001)
    store.put_signal(run_id, "gopher", "prefix of another name")
    go = store.signals(run_id, "go")
    assert [s.payload for s in go] == ["0", "2", "4"]
    assert go == [s for s in sent if s.name == "go"]
    assert [s.signal_key for s in go] == sorted(s.signal_key for s in go)
    assert [s.payload for s in store.signals(run_id, "stop")] == ["1", "3", "5"]
    assert store.signals(run_id, "none") == [] and store.signals(uid(), "go") == []
    burst = [store.put_signal(run_id, "burst", str(i)) for i in range(20)]  # no time passes between them
    assert store.get_run(run_id).wake_seq == 27  # each signal woke the run in the same write
    assert [s.payload for s in store.signals(run_id, "burst")] == [s.payload for s in burst]



def test_a_signal_sent_after_another_is_ordered_after_it_whatever_the_senders_clocks(  # type: ignore[no-untyped-def]
        store, clock) -> None:
    """Senders' clocks differ (a client restarted on another host): a signal stored after another
    is still taken after it (simulator seed 2102 took "second" before "first")."""
    run_id = start(store)
    store.put_signal(run_id, "item", '"first"')
    clock.time -= 2.0  # the next sender's clock is two seconds behind the first's
    store.put_signal(run_id, "item", '"second"')
    clock.time -= 2.0
    store.put_signal(run_id, "item", '"third"')
    assert [s.payload for s in store.signals(run_id, "item")] == ['"first"', '"second"', '"third"']
    clock.advance(10.0)  # a sender whose clock is ahead orders by its own time again
    assert store.put_signal(run_id, "item", '"fourth"').signal_key.split("#")[1] == f"{int(clock.now() * 1e9):020d}"

def test_stored_signals_reads_every_signal_and_request_of_a_run_in_key_order(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    other = start(store)
    go = store.put_signal(run_id, "go", "1")
    clock.advance(0.001)
    stop = store.put_signal(run_id, "stop", "2")
    store.put_signal(other, "go", "elsewhere")
    request = SignalRecord(run_id=run_id, signal_key=request_key("u1"), name=REQUEST_NAME,
                           payload=embed({"id": "u1", "name": "add"}, "3"), sent_at=store.now())
    assert store.put_update(request, run_id)
    stored = store.stored_signals(run_id)
    assert [s.signal_key for s in stored] == sorted([go.signal_key, stop.signal_key, request_key("u1")])
    assert [s.payload for s in stored if s.name != REQUEST_NAME] == ["1", "2"]
    assert [s.order_number is not None for s in stored if s.name == REQUEST_NAME] == [True]
    store.delete_signals(run_id, [go.signal_key])
    assert [s.name for s in store.stored_signals(run_id)] == ["stop", REQUEST_NAME]
    assert store.stored_signals(uid()) == []


def test_record_branch_once_and_results_in_index_order(store) -> None:  # type: ignore[no-untyped-def]
    join = f"{uid()}#4"
    assert store.record_branch(join, 3, "30", None) is True
    assert store.record_branch(join, 0, None, "Boom: failed") is True
    assert store.record_branch(join, 3, "again", None) is False
    assert store.record_branch(join, 12, "120", None) is True
    store.join_branch(join, 0, 20)  # counters are not results
    results = store.branch_results(join)
    assert [(r.index, r.data, r.error) for r in results] == [(0, None, "Boom: failed"), (3, "30", None),
                                                             (12, "120", None)]
    assert store.branch_results(uid()) == []


def test_join_completes_exactly_when_every_branch_is_counted(store) -> None:  # type: ignore[no-untyped-def]
    join, total = f"{uid()}#0", 130  # two counter shards
    rng = random.Random(11)
    deliveries = list(range(total)) + rng.sample(range(total), 30)
    rng.shuffle(deliveries)
    counted: set[int] = set()
    for index in deliveries:
        counted.add(index)
        assert store.join_branch(join, index, total) is (len(counted) == total), index
    assert store.join_branch(join, 0, total) is True  # a late repeat still reports completion


def test_a_tally_adds_each_branch_once_and_returns_both_sets(store) -> None:  # type: ignore[no-untyped-def]
    join = f"{uid()}#2"
    assert store.tally_branch(join, 4, False) == ({4}, set())
    assert store.tally_branch(join, 1, True) == ({4}, {1})
    assert store.tally_branch(join, 4, False) == ({4}, {1})  # a repeat adds nothing and reads the sets
    assert store.tally_branch(join, 1, False) == ({4}, {1})  # nor moves a branch to the other set
    assert store.tally_branch(join, 250, False) == ({4, 250}, {1})
    assert store.join_items(join) == [] or all(not c.done for c in store.join_items(join))  # no counter
    assert store.branch_results(join, 300) == []  # nor a branch result


def test_small_joins(store) -> None:  # type: ignore[no-untyped-def]
    single = f"{uid()}#0"
    assert store.join_branch(single, 0, 1) is True and store.join_branch(single, 0, 1) is True
    join = f"{uid()}#1"
    assert [store.join_branch(join, i, 3) for i in (0, 0, 1, 1, 2, 0)] == [False, False, False, False, True, True]


def test_a_signal_to_an_ended_or_missing_run_is_not_stored(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    store.finish_run(run_id, RunEnding("completed", result="1"))
    assert store.put_signal(run_id, "go", "1") is None
    assert store.put_signal(uid(), "go", "1") is None
    assert store.signals(run_id, "go") == []
