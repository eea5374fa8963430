"""Flow control in every Store: concurrency slots (leased, reclaimed) and token buckets."""

from __future__ import annotations

import pytest

from .support import uid


def test_slots_are_taken_up_to_capacity_and_freed_by_their_holder(store, clock) -> None:  # type: ignore[no-untyped-def]
    limit, until = uid("step:s"), clock.now() + 30
    first = store.acquire_slot(limit, 2, "a", until)
    second = store.acquire_slot(limit, 2, "b", until)
    assert {first, second} == {0, 1}
    assert store.acquire_slot(limit, 2, "c", until) is None
    assert store.release_slot(limit, first, "b") is False  # only its holder frees a slot
    assert store.release_slot(limit, first, "a") is True
    assert store.acquire_slot(limit, 2, "c", until) == first
    assert sorted((s.slot, s.holder) for s in store.slot_holders(limit)) == sorted([(first, "c"), (second, "b")])


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


def test_a_bucket_gives_its_burst_then_says_how_long_until_the_next_token(store, clock) -> None:  # type: ignore[no-untyped-def]
    bucket = uid("rate:s")
    assert [store.take_token(bucket, 10.0, 3.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = store.take_token(bucket, 10.0, 3.0)
    assert wait == pytest.approx(0.1)
    clock.advance(0.05)
    assert store.take_token(bucket, 10.0, 3.0) == pytest.approx(0.05)  # a refused take spends nothing
    clock.advance(0.05)
    assert store.take_token(bucket, 10.0, 3.0) == 0.0
    assert store.take_token(bucket, 10.0, 3.0) > 0


def test_a_bucket_refills_at_its_rate_up_to_its_burst(store, clock) -> None:  # type: ignore[no-untyped-def]
    bucket = uid("rate:s")
    assert store.take_token(bucket, 2.0, 2.0) == 0.0
    assert store.take_token(bucket, 2.0, 2.0) == 0.0
    clock.advance(60)  # a long idle spell refills the burst, no more
    taken = [store.take_token(bucket, 2.0, 2.0) for _ in range(3)]
    assert taken[:2] == [0.0, 0.0] and taken[2] == pytest.approx(0.5)


def test_a_clock_behind_the_bucket_refills_nothing(store, clock) -> None:  # type: ignore[no-untyped-def]
    bucket = uid("rate:s")
    assert store.take_token(bucket, 1.0, 1.0) == 0.0
    clock.time -= 5  # another worker's clock, behind
    assert store.take_token(bucket, 1.0, 1.0) == pytest.approx(6.0)
