"""Flow control in every Store: concurrency slots (leased, reclaimed) and token buckets."""

from __future__ import annotations

import pytest

from .support import start, uid


def test_slots_are_taken_up_to_capacity_and_freed_by_their_holder(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit, until = uid("step:s"), clock.now() + 30
    first = store.acquire_slot(limit, 2, "a", until)
    second = store.acquire_slot(limit, 2, "b", until)
    assert {first, second} == {0, 1}
    assert store.acquire_slot(limit, 2, "c", until) is None
    assert store.release_slot(limit, first, "b") is False  # only its holder frees a slot
    assert store.release_slot(limit, first, "a") is True
    assert store.acquire_slot(limit, 2, "c", until) == first
    assert sorted((s.number, s.holder) for s in store.slot_holders(limit)) == sorted([(first, "c"), (second, "b")])


def test_a_holder_never_takes_a_second_slot_while_it_holds_one(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit, until = uid("step:s"), clock.now() + 30
    assert store.acquire_slot(limit, 3, "a", until) is not None
    assert store.acquire_slot(limit, 3, "a", until) is None  # a second copy of one attempt waits
    assert len(store.slot_holders(limit)) == 1


def test_an_expired_slot_is_reclaimed_and_its_old_holder_loses_it(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit = uid("step:s")
    slot = store.acquire_slot(limit, 1, "dead", clock.now() + 30)
    assert store.acquire_slot(limit, 1, "b", clock.now() + 30) is None
    clock.advance(31)
    assert store.acquire_slot(limit, 1, "b", clock.now() + 30) == slot
    assert store.renew_slot(limit, slot, "dead", clock.now() + 30) is False
    assert store.release_slot(limit, slot, "dead") is False
    assert [s.holder for s in store.slot_holders(limit)] == ["b"]



def test_a_taking_by_token_is_renewed_and_freed_only_by_that_token(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit = uid("step:s")
    slot = store.acquire_slot(limit, 1, "a", clock.now() + 30, token="first")
    clock.advance(31)  # the first copy of attempt "a" stalled past its lease: a second copy takes the slot
    assert store.acquire_slot(limit, 1, "a", clock.now() + 30, token="second") == slot
    assert store.renew_slot(limit, slot, "a", clock.now() + 30, token="first") is False
    assert store.release_slot(limit, slot, "a", token="first") is False  # not the second copy's taking
    assert store.acquire_slot(limit, 1, "b", clock.now() + 30) is None
    assert store.renew_slot(limit, slot, "a", clock.now() + 30, token="second") is True
    assert store.release_slot(limit, slot, "a", token="second") is True
    assert store.slot_holders(limit) == []

def test_a_renewed_slot_stays_held_past_its_first_lease(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit = uid("step:s")
    slot = store.acquire_slot(limit, 1, "a", clock.now() + 30)
    clock.advance(20)
    assert store.renew_slot(limit, slot, "a", clock.now() + 30) is True
    clock.advance(20)  # past the first lease, within the renewed one
    assert store.acquire_slot(limit, 1, "b", clock.now() + 30) is None


def test_slots_of_a_smaller_capacity_ignore_slots_beyond_it(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit, until = uid("step:s"), clock.now() + 30
    held = {store.acquire_slot(limit, 3, h, until): h for h in ("a", "b", "c")}
    assert sorted(held) == [0, 1, 2]
    assert store.release_slot(limit, 0, held[0]) is True
    # Down to capacity 1 (a deploy): slot 0 is free, slots 1 and 2 do not count.
    assert store.acquire_slot(limit, 1, "d", until) == 0
    assert store.acquire_slot(limit, 1, "e", until) is None


def test_a_bucket_gives_its_burst_then_reserves_tokens_in_order(store, clock) -> None:  # type: ignore[no-untyped-def]
    bucket = uid("rate:s")
    assert [store.take_token(bucket, 10.0, 3.0, h) for h in ("a", "b", "c")] == [0.0, 0.0, 0.0]
    # Waiters each get the next token due, in the order they came: no herd comes back at once.
    assert store.take_token(bucket, 10.0, 3.0, "d") == pytest.approx(0.1, abs=1e-3)
    assert store.take_token(bucket, 10.0, 3.0, "e") == pytest.approx(0.2, abs=1e-3)
    clock.advance(0.05)
    assert store.take_token(bucket, 10.0, 3.0, "d") == pytest.approx(0.05, abs=1e-3)  # early: still reserved, not twice
    assert store.take_token(bucket, 10.0, 3.0, "f") == pytest.approx(0.25, abs=1e-3)
    clock.advance(0.05)
    assert store.take_token(bucket, 10.0, 3.0, "d") == 0.0  # its reservation, once due
    assert store.take_token(bucket, 10.0, 3.0, "d") == pytest.approx(0.3, abs=1e-3)  # used: a new take queues after f


def test_a_bucket_refills_at_its_rate_up_to_its_burst(store, clock) -> None:  # type: ignore[no-untyped-def]
    bucket = uid("rate:s")
    assert store.take_token(bucket, 2.0, 2.0, "a") == 0.0
    assert store.take_token(bucket, 2.0, 2.0, "b") == 0.0
    clock.advance(60)  # a long idle spell refills the burst, no more
    taken = [store.take_token(bucket, 2.0, 2.0, h) for h in ("c", "d", "e")]
    assert taken[:2] == [0.0, 0.0] and taken[2] == pytest.approx(0.5, abs=1e-3)


def test_a_clock_behind_the_bucket_refills_nothing(store, clock) -> None:  # type: ignore[no-untyped-def]
    bucket = uid("rate:s")
    assert store.take_token(bucket, 1.0, 1.0, "a") == 0.0
    clock.time -= 5  # another worker's clock, behind
    assert store.take_token(bucket, 1.0, 1.0, "b") == pytest.approx(6.0, abs=1e-3)


def test_waiters_coming_back_when_due_are_admitted_at_the_rate(store, clock) -> None:  # type: ignore[no-untyped-def]
    bucket, began = uid("rate:s"), clock.now()
    admitted: list[float] = []
    waiting: dict[str, float] = {}
    for tick in range(40):  # two takers arrive every 0.1 s: four times the rate
        due_now = [h for h, due in waiting.items() if due <= clock.now() + 1e-6]
        for holder in [f"h{tick}a", f"h{tick}b", *due_now]:
            wait = store.take_token(bucket, 5.0, 2.0, holder)
            if wait == 0.0:
                admitted.append(clock.now() - began)
                waiting.pop(holder, None)
            else:
                waiting[holder] = clock.now() + wait
        clock.advance(0.1)
    for i, first in enumerate(admitted):  # any window of w seconds: at most burst + rate * w
        assert sum(1 for t in admitted[i:] if t - first <= 1.0 + 1e-6) <= 2 + 5.0 * 1.0
    assert len(admitted) >= 5.0 * 3.9 - 1  # and the rate is used to the full


def test_a_slot_passes_to_a_successor_once_and_only_from_its_holder(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit = uid("workflow:w")
    slot = store.acquire_slot(limit, 1, "first", clock.now() + 10**9)
    assert store.pass_slot(limit, slot, "someone-else", "thief") is False
    assert store.pass_slot(limit, slot, "first", "second") is True
    assert store.pass_slot(limit, slot, "first", "second") is True  # the same pass again (a retried request)
    assert store.pass_slot(limit, slot, "first", "third") is False
    assert [(s.number, s.holder) for s in store.slot_holders(limit)] == [(slot, "second")]
    assert store.acquire_slot(limit, 1, "third", clock.now() + 10) is None  # the lease went with it


def test_waiters_keep_one_place_each_in_order(store, clock) -> None:  # type: ignore[no-untyped-def]
    queue = uid("queue:workflow:w")
    base = 1_800_000_000_000_000
    assert store.enqueue_waiter(queue, base + 20, "late") == base + 20
    assert store.enqueue_waiter(queue, base + 10, "early") == base + 10
    assert store.enqueue_waiter(queue, base + 10, "early") == base + 10  # repeated: the same place
    assert store.enqueue_waiter(queue, base + 10, "tied") == base + 11  # same microsecond: the next free place
    assert [w.holder for w in store.slot_holders(queue)] == ["early", "tied", "late"]
    assert store.release_slot(queue, base + 10, "tied") is False  # only its own place is taken out
    assert store.release_slot(queue, base + 11, "tied") is True
    assert [(w.number, w.holder) for w in store.slot_holders(queue)] == [(base + 10, "early"), (base + 20, "late")]


def test_a_push_into_an_open_window_sets_the_runs_arguments_and_the_windows_end(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id, window = start(store), uid("debounce:wf#k")
    assert store.acquire_slot(window, 1, run_id, clock.now() + 5) == 0
    assert store.push_debounce(window, run_id, '[["late"],{}]', clock.now() + 9) is True
    assert store.push_debounce(window, run_id, '[["late"],{}]', clock.now() + 9) is True  # repeated: the same
    assert store.get_run(run_id).args == '[["late"],{}]'
    assert [(s.holder, s.expires_at) for s in store.slot_holders(window)] == [(run_id, clock.now() + 9)]


def test_a_push_into_a_closed_expired_or_other_window_writes_nothing(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id, other, window = start(store), start(store), uid("debounce:wf#k")
    before = store.get_run(run_id).args
    assert store.push_debounce(window, run_id, '[["x"],{}]', clock.now() + 5) is False  # no window
    assert store.acquire_slot(window, 1, other, clock.now() + 5) == 0
    assert store.push_debounce(window, run_id, '[["x"],{}]', clock.now() + 5) is False  # another run's window
    clock.advance(6)
    assert store.push_debounce(window, other, '[["x"],{}]', clock.now() + 5) is False  # its end has passed
    assert store.release_slot(window, 0, other) is True
    assert store.push_debounce(window, other, '[["x"],{}]', clock.now() + 5) is False  # closed
    assert store.get_run(run_id).args == before and store.get_run(other).args == before
    assert store.slot_holders(window) == []
    ghost, window2 = uid("r"), uid("debounce:wf#k")
    assert store.acquire_slot(window2, 1, ghost, clock.now() + 5) == 0
    assert store.push_debounce(window2, ghost, '[["x"],{}]', clock.now() + 9) is False  # its run does not exist
    assert store.find_run(ghost) is None
    assert [s.expires_at for s in store.slot_holders(window2)] == [clock.now() + 5]
