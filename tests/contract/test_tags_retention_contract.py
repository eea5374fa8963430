"""Store contract: run tags (index items, paging, set_tags) and retention (TTL on every item of an ended run)."""

from __future__ import annotations

import json
import math

import pytest

from tests.contract.support import record_outcome
from workflows.core.model.records import EventRecord, HookRecord, RunEnding, TimeRange, attempt_seq, event_seq
from workflows.core.storage.retention import EXPIRING_TABLES, write_expiry
from workflows.settings import DEFAULT_RETENTION_SECONDS

from .conftest import LEASE_SECONDS
from .retention_items import items_of_run, timer_ttl, ttl_of
from .support import run_record, start, timer, uid


def tagged(store, clock, value: str, count: int, **tags: str) -> list[str]:  # type: ignore[no-untyped-def]
    """``count`` runs tagged ``t=value`` (and ``tags``), one second apart, oldest first."""
    ids = []
    for _ in range(count):
        clock.advance(1)
        ids.append(start(store, tags={"t": value, **tags}, created_at=store.now()))
    return ids


def pages(store, **query) -> list[list[str]]:  # type: ignore[no-untyped-def]
    found, cursor = [], None
    while True:
        page = store.list_runs(cursor=cursor, **query)
        found.append([r.run_id for r in page])
        if not page.next_cursor:
            return found
        cursor = page.next_cursor


def test_runs_are_listed_by_tag_newest_first_in_pages(store, clock) -> None:  # type: ignore[no-untyped-def]
    value = uid("v")
    ids = tagged(store, clock, value, 5, region="eu")
    tagged(store, clock, uid("other"), 1)
    got = pages(store, tag=("t", value), limit=2)
    assert [r for page in got for r in page] == ids[::-1]
    assert all(len(page) <= 2 for page in got) and len(got[0]) == 2
    run = store.get_run(ids[0])
    assert run.tags == {"t": value, "region": "eu"}
    assert [r.run_id for r in store.list_runs(tag=("region", "eu"), limit=1000) if r.run_id in ids] == ids[::-1]


def test_a_tag_listing_combines_with_workflow_and_time_not_with_status(store, clock) -> None:  # type: ignore[no-untyped-def]
    value = uid("v")
    a = tagged(store, clock, value, 2)
    b = [start(store, tags={"t": value}, workflow="other", created_at=store.now() + 1)]
    assert [r.run_id for r in store.list_runs(tag=("t", value), workflow="wf")] == a[::-1]
    assert [r.run_id for r in store.list_runs(tag=("t", value), workflow="other")] == b
    first = store.get_run(a[0]).created_at
    assert [r.run_id for r in store.list_runs(tag=("t", value), created=TimeRange(until=first))] == [a[0]]
    assert [r.run_id for r in store.list_runs(tag=("t", value), created=TimeRange(since=first + 0.5))] == [b[0], a[1]]
    with pytest.raises(ValueError, match="status"):
        store.list_runs(tag=("t", value), status="pending")


def test_set_tags_moves_the_index_items_once_and_only_while_live(store, clock) -> None:  # type: ignore[no-untyped-def]
    value = uid("v")
    [run_id] = tagged(store, clock, value, 1, stage="new")
    run = store.get_run(run_id)
    after = {"t": value, "stage": "paid"}
    event = EventRecord(run_id=run_id, seq=event_seq(0), kind="tags", status="set", at=store.now(),
                        data=json.dumps(after))
    assert store.set_tags(event, run, {"t": value, "stage": "new"}, after)
    assert store.get_run(run_id).tags == after
    assert [r.run_id for r in store.list_runs(tag=("stage", "paid"), limit=1000) if r.run_id == run_id] == [run_id]
    assert run_id not in {r.run_id for r in store.list_runs(tag=("stage", "new"), limit=1000)}
    again = EventRecord(run_id=run_id, seq=event_seq(0), kind="tags", status="set", at=store.now(),
                        data=json.dumps({"t": value, "stage": "lost"}))
    assert not store.set_tags(again, run, after, {"t": value, "stage": "lost"})  # the slot is taken: nothing written
    assert store.get_run(run_id).tags == after
    assert store.list_runs(tag=("stage", "lost")).items == []
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    late = EventRecord(run_id=run_id, seq=event_seq(1), kind="tags", status="set", at=store.now(), data="{}")
    assert not store.set_tags(late, run, after, {})  # ended: nothing written
    assert store.get_outcome(run_id, 1) is None and store.get_run(run_id).tags == after


def ended_run_with_every_kind_of_item(store, clock) -> str:  # type: ignore[no-untyped-def]
    """A run with history, a fan-out (branch results, counters, branch attempts), a hook, a
    signal, an idempotency guard and tags, then ended."""
    run_id = start(store, key=uid("key"), tags={"customer": uid("c")})
    record_outcome(store, run_id, 0, "step", "completed", name="a", data="1")
    store.record_attempt(EventRecord(run_id=run_id, seq=attempt_seq(1, 1), kind="attempt", status="failed",
                                     at=store.now(), name="b", error="x", attempt=1), while_live=run_id)
    join = f"{run_id}#2"
    store.record_branch(join, 0, "1", None)
    store.join_branch(join, 0, 2)
    store.record_attempt(EventRecord(run_id=join, seq=attempt_seq(1, 1), kind="attempt", status="failed",
                                     at=store.now(), name="b", error="x", attempt=1), while_live=run_id)
    store.record_event_while_live(EventRecord(run_id=run_id, seq=event_seq(2), kind="parallel", status="completed",
                                              at=store.now(), data="[1,2]"))
    hook = HookRecord(token_hash=uid("h"), run_id=run_id, pos=3, name="approve", status="pending",
                      created_at=store.now())
    expiry = timer(run_id, 3, store.now() + 86400, kind="hook_timeout")  # never waited on: it outlives the run
    assert store.create_hook(hook, expiry, run_id, 3, "{}") is not None
    assert store.put_signal(run_id, "go", "1") is not None
    clock.advance(100)
    assert store.finish_run(run_id, RunEnding("completed", result="2", fence=4)) is not None
    return run_id


def test_every_item_of_an_ended_run_gets_the_ttl_retention_after_its_end(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = ended_run_with_every_kind_of_item(store, clock)
    run = store.get_run(run_id)
    expected = math.ceil(run.ended_at + DEFAULT_RETENTION_SECONDS)
    assert run.retain_until == expected
    items = items_of_run(store, run_id)
    assert {table for table, _ in items} == {"runs", "history", "joins", "hooks", "signals", "idempotency", "tags"}
    later = {t for t, i in items if t in EXPIRING_TABLES and ttl_of(i) is not None and ttl_of(i) >= expected}
    assert later == {"history", "joins", "signals"}  # written expiring, later than the run's TTL
    assert [ttl_of(i) for t, i in items if t not in ("runs", *EXPIRING_TABLES)] == [None] * (
        len([t for t, _ in items if t not in ("runs", *EXPIRING_TABLES)]))  # stamped after the end
    assert run_id not in store.runs_to_retain(run.ended_at, limit=1_000_000)  # not before it ended a while ago
    clock.advance(LEASE_SECONDS)
    assert run_id in store.runs_to_retain(store.now() - LEASE_SECONDS + 1, limit=1_000_000)
    assert store.retain_run(run_id)
    stamped = items_of_run(store, run_id)
    assert len(stamped) == len(items)  # nothing created, nothing lost
    assert {(t, ttl_of(i)) for t, i in stamped if t not in EXPIRING_TABLES} == {
        (t, expected) for t, _ in items if t not in EXPIRING_TABLES}
    assert all(ttl_of(i) >= expected for t, i in stamped if t in EXPIRING_TABLES)
    assert timer_ttl(store, f"{run_id}#3#hook_timeout") == expected
    assert run_id not in store.runs_to_retain(store.now(), limit=1_000_000)
    assert not store.retain_run(run_id)  # out of the index: a repeat writes nothing


def test_a_live_run_is_never_stamped(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store, key=uid("key"), tags={"a": "b"})
    record_outcome(store, run_id, 0, "step", "completed", name="a", data="1")
    clock.advance(10 * LEASE_SECONDS)
    assert run_id not in store.runs_to_retain(store.now(), limit=1_000_000)
    assert not store.retain_run(run_id)
    items = items_of_run(store, run_id)
    assert {ttl_of(i) for t, i in items if t not in EXPIRING_TABLES} == {None}
    assert all(ttl_of(i) > store.now() for t, i in items if t in EXPIRING_TABLES)  # written expiring, kept alive


def test_a_continued_run_leaves_its_guard_to_the_chain_s_last_run(store, clock) -> None:  # type: ignore[no-untyped-def]
    key = uid("key")
    first = start(store, key=key, tags={"a": "b"})
    successor = run_record(store, run_id=uid(), continued_from=first, key=key, tags={"a": "b"})
    assert store.continue_run(first, successor) is not None
    assert store.get_run(successor.run_id).tags == {"a": "b"}
    clock.advance(2 * LEASE_SECONDS)
    assert store.retain_run(first)
    assert ttl_of(dict(next(i for t, i in items_of_run(store, first) if t == "idempotency"))) is None
    assert store.finish_run(successor.run_id, RunEnding("completed", result="1")) is not None
    assert store.retain_run(successor.run_id)
    guard = next(i for t, i in items_of_run(store, first) if t == "idempotency")
    assert ttl_of(guard) == store.get_run(successor.run_id).retain_until
    assert store.run_for_key(key) == first


def test_without_retention_an_end_sets_no_ttl(store, clock) -> None:  # type: ignore[no-untyped-def]
    store.settings = store.settings.with_(retention=None)  # both stores read it at each end
    run_id = start(store)
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    clock.advance(10 * LEASE_SECONDS)
    assert store.get_run(run_id).retain_until is None
    assert run_id not in store.runs_to_retain(store.now(), limit=1_000_000)


def test_keep_alive_renews_a_live_runs_expiring_items_only(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store, key=uid("key"), tags={"a": "b"})
    record_outcome(store, run_id, 0, "step", "completed", name="a", data="1")
    clock.advance(8 * 86400)
    until = write_expiry(store.now(), store.settings)
    assert not store.keep_run_alive(run_id, store.now() - 9 * 86400, until)  # created after that
    assert store.keep_run_alive(run_id, store.now(), until)
    items = items_of_run(store, run_id)
    assert [ttl_of(i) for t, i in items if t == "history"] == [until]
    assert {ttl_of(i) for t, i in items if t not in EXPIRING_TABLES} == {None}  # the run, its key and tags
    assert not store.keep_run_alive(run_id, store.now(), until + 10)  # renewed at this moment
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    clock.advance(1)
    assert not store.keep_run_alive(run_id, store.now(), until + 10)  # ended: retention takes over


def test_keep_alive_renews_a_chains_first_run_through_its_live_run(store, clock) -> None:  # type: ignore[no-untyped-def]
    """A chain's first run (ended ``continued``, kept while the chain lives) is renewed when its live run is:
    the pass lists live runs only, so it never reads the chain's middle runs, which may expire meanwhile."""
    head = start(store)
    record_outcome(store, head, 0, "step", "completed", name="a", data="1")
    last = run_record(store, run_id=uid(), continued_from=head, chain_head=head)
    assert store.continue_run(head, last) is not None
    clock.advance(8 * 86400)
    until = write_expiry(store.now(), store.settings)
    assert not store.keep_run_alive(head, store.now(), until)  # not live: only through its chain's live run
    assert store.keep_run_alive(last.run_id, store.now(), until)
    assert [ttl_of(i) for t, i in items_of_run(store, head) if t == "history"] == [until]
    assert store.get_run(head).retain_until is None
