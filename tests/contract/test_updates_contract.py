"""Store contract: put_update (a request stored once, with the wake, only while live), answer_update (the
op's record, its answer item and the request's delete, one transaction, only while live), refuse_update,
and the retention of their items with the run."""

from __future__ import annotations

import math

import pytest

from workflows.core.model.embed import embed
from workflows.core.model.records import EventRecord, RunEnding, SignalRecord, event_seq
from workflows.core.replay.updates import REQUEST_NAME, answer_seq, find_answer, request_key
from workflows.errors import RunNotFound
from workflows.settings import DEFAULT_RETENTION_SECONDS

from .conftest import LEASE_SECONDS
from .retention_items import items_of_run, ttl_of
from .support import start, uid


def request(store, run_id: str, update_id: str, payload: str = '"x"') -> SignalRecord:  # type: ignore[no-untyped-def]
    return SignalRecord(run_id=run_id, signal_key=request_key(update_id), name=REQUEST_NAME,
                        payload=embed({"id": update_id, "name": "add"}, payload), sent_at=store.now())


def record(store, run_id: str, pos: int, update_id: str) -> EventRecord:  # type: ignore[no-untyped-def]
    return EventRecord(run_id=run_id, seq=event_seq(pos), kind="update", status="completed", at=store.now(),
                       name="add", data=embed({"id": update_id}, '"x"'))


def answer(store, run_id: str, update_id: str, status: str = "completed") -> EventRecord:  # type: ignore[no-untyped-def]
    return EventRecord(run_id=run_id, seq=answer_seq(update_id), kind="update", status=status, at=store.now(),
                       name=update_id, data="1" if status == "completed" else None,
                       error="refused: why" if status == "refused" else None)


def test_put_update_stores_a_request_once_and_wakes_the_run_only_while_live(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    woken = store.get_run(run_id).wake_seq
    assert store.put_update(request(store, run_id, "u1"), run_id)
    assert store.get_run(run_id).wake_seq == woken + 1
    assert not store.put_update(request(store, run_id, "u1", '"y"'), run_id)  # a retry: stored already
    assert [(s.signal_key, s.payload) for s in store.signals(run_id, REQUEST_NAME)] == [
        (request_key("u1"), request(store, run_id, "u1").payload)]
    assert store.signals(run_id, "add") == []  # a user's signal names never read requests
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    assert not store.put_update(request(store, run_id, "u2"), run_id)
    assert [s.signal_key for s in store.signals(run_id, REQUEST_NAME)] == [request_key("u1")]


def test_requests_are_ordered_as_stored_whatever_the_senders_clocks(store, clock) -> None:  # type: ignore[no-untyped-def]
    """A request's place is the store's order (the anchor's signal clock, shared with signals), not
    its sender's clock: a client restarted with its clock behind (simulator seed 25948)."""
    run_id = start(store)
    assert store.put_update(request(store, run_id, "u1"), run_id)
    clock.time -= 3.1  # the next sender's clock is behind the first's
    assert store.put_update(request(store, run_id, "u2"), run_id)
    sent = store.put_signal(run_id, "go", "1")
    clock.time -= 1.0
    assert store.put_update(request(store, run_id, "u3"), run_id)
    numbers = {s.signal_key: s.order_number for s in store.signals(run_id, REQUEST_NAME)}
    signal_number = int(sent.signal_key.split("#")[1])
    assert numbers[request_key("u1")] < numbers[request_key("u2")] < signal_number < numbers[request_key("u3")]
    with pytest.raises(RunNotFound):  # no anchor to number it by: an error, not a request taken as stored
        store.put_update(request(store, uid(), "u4"), run_id)


def test_a_request_that_lost_its_place_to_a_later_one_is_stored_after_it(store, clock) -> None:  # type: ignore[no-untyped-def]
    """Another sender stores a signal between this request's read of the anchor's clock and its
    write: the write is refused and made again, ordered after that signal."""
    run_id = start(store)
    woken = store.get_run(run_id).wake_seq
    read_clock = store.anchor_clock
    raced: list[str] = []

    def then_another_sender(anchor: str):  # type: ignore[no-untyped-def]
        item = read_clock(anchor)
        if not raced:  # (the signal's own read of the clock comes here too)
            raced.append("")
            clock.time += 5.0  # that sender's clock is ahead
            raced[0] = store.put_signal(run_id, "go", "1").signal_key
            clock.time -= 5.0
        return item

    store.anchor_clock = then_another_sender
    assert store.put_update(request(store, run_id, "u1"), run_id)
    (stored,) = store.signals(run_id, REQUEST_NAME)
    assert stored.order_number > int(raced[0].split("#")[1])
    assert store.get_run(run_id).wake_seq == woken + 2  # the signal's wake and the request's, once each


def test_a_claim_at_or_before_a_recorded_update_fails(store, clock) -> None:  # type: ignore[no-untyped-def]
    """A resume read the history before another resume (which held no claim) recorded an update at
    the position of the resume's next step: its claim of that position must fail, so it reads the
    history again, instead of running the step there and finding the position taken when it writes
    the outcome, with its claim held and nobody left to run the run (simulator seed 29807)."""
    run_id = start(store)
    for pos, update_id in enumerate(("u1", "u2")):
        assert store.put_update(request(store, run_id, update_id), run_id)
        assert store.answer_update(record(store, run_id, pos, update_id), answer(store, run_id, update_id),
                                   request(store, run_id, update_id))
    waiting = {"kind": "step", "name": "s"}
    assert not store.claim_run(run_id, 1, "stale", waiting)  # its history showed only the update at 0
    assert not store.claim_run(run_id, 0, "stale", waiting)
    assert store.get_run(run_id).status == "pending"
    assert store.claim_run(run_id, 2, "current", waiting)  # after both updates: the position is free


def test_answer_update_records_once_deletes_the_request_and_only_while_live(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.put_update(request(store, run_id, "u1"), run_id)
    assert store.answer_update(record(store, run_id, 0, "u1"), answer(store, run_id, "u1"),
                               request(store, run_id, "u1"))
    assert store.signals(run_id, REQUEST_NAME) == []
    found = find_answer(store, run_id, "u1")
    assert found is not None and (found.status, found.data) == ("completed", "1")
    outcome = store.get_outcome(run_id, 0)
    assert outcome is not None and outcome.kind == "update"
    assert [e.seq for e in store.read_history(run_id)] == [event_seq(0)]  # the answer item is not an op
    # the position is taken (another resume): nothing written, not even the second answer
    assert store.put_update(request(store, run_id, "u2"), run_id)
    assert not store.answer_update(record(store, run_id, 0, "u2"), answer(store, run_id, "u2"),
                                   request(store, run_id, "u2"))
    assert find_answer(store, run_id, "u2") is None and len(store.signals(run_id, REQUEST_NAME)) == 1
    # the answer is taken (answered at another position): nothing written
    assert not store.answer_update(record(store, run_id, 1, "u1"), answer(store, run_id, "u1"),
                                   request(store, run_id, "u2"))
    assert store.get_outcome(run_id, 1) is None
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    assert not store.answer_update(record(store, run_id, 1, "u2"), answer(store, run_id, "u2"),
                                   request(store, run_id, "u2"))
    assert store.get_outcome(run_id, 1) is None and find_answer(store, run_id, "u2") is None


def test_refuse_update_puts_the_answer_without_a_history_record(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.put_update(request(store, run_id, "u1"), run_id)
    assert store.refuse_update(answer(store, run_id, "u1", "refused"), request(store, run_id, "u1"))
    found = find_answer(store, run_id, "u1")
    assert found is not None and (found.status, found.error) == ("refused", "refused: why")
    assert store.read_history(run_id) == [] and store.signals(run_id, REQUEST_NAME) == []
    assert not store.refuse_update(answer(store, run_id, "u1", "refused"), request(store, run_id, "u1"))
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    assert store.put_update(request(store, run_id, "u2"), run_id) is False
    assert not store.refuse_update(answer(store, run_id, "u2", "refused"), request(store, run_id, "u2"))
    assert find_answer(store, run_id, "u2") is None


def test_update_items_expire_with_their_run(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.put_update(request(store, run_id, "u1"), run_id)
    assert store.put_update(request(store, run_id, "u2"), run_id)
    assert store.answer_update(record(store, run_id, 0, "u1"), answer(store, run_id, "u1"),
                               request(store, run_id, "u1"))
    # u2 never answered: its request stays
    assert store.finish_run(run_id,
                            RunEnding("completed", result="1")) is not None
    expected = math.ceil(store.get_run(run_id).ended_at + DEFAULT_RETENTION_SECONDS)
    clock.advance(2 * LEASE_SECONDS)
    assert store.retain_run(run_id)
    kept = [(t, i) for t, i in items_of_run(store, run_id) if t != "runs"]
    assert sorted(t for t, _ in kept) == ["history", "history", "signals"], kept  # the op, its answer, u2
    assert all(ttl_of(i) >= expected for _, i in kept), kept  # written expiring, later than the run's TTL
