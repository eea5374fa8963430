"""Store contract: what a live run reads of other runs outlives their retention (invariant 14): a
child's end in its parent's history, a continue-as-new chain's anchor, signals kept under it."""

from __future__ import annotations

from workflows.core.model.records import EventRecord, RunEnding, child_end_seq

from .conftest import LEASE_SECONDS
from .retention_items import items_of_run, ttl_of
from .support import run_record, start, uid


def notice(parent: str, pos: int, data: str = "42") -> EventRecord:
    return EventRecord(run_id=parent, seq=child_end_seq(pos), kind="child_end", status="completed", at=0.0,
                       name="kid", data=data)


def test_a_child_end_writes_its_record_into_its_parent_with_the_wake(store, clock) -> None:  # type: ignore[no-untyped-def]
    parent = start(store)
    child = start(store, parent_run_id=parent, parent_pos=3)
    woken = store.get_run(parent).wake_seq
    ended = store.finish_run(child, RunEnding("completed", result="42", wake=parent, wake_record=notice(parent, 3)))
    assert ended is not None and ended.status == "completed"
    assert store.get_run(parent).wake_seq == woken + 1
    record = store.get_event(parent, child_end_seq(3))
    assert (record.kind, record.status, record.name, record.data, record.pos) == (
        "child_end", "completed", "kid", "42", 3)
    assert [e.seq for e in store.read_history(parent)] == [child_end_seq(3)]
    assert store.get_outcome(parent, 3) is None  # neither an outcome nor an attempt
    assert store.get_event(parent, child_end_seq(4)) is None


def test_a_child_end_wakes_a_parent_whose_executor_holds_it(store) -> None:  # type: ignore[no-untyped-def]
    """A parent running inline steps (claimed by its resume, lease live) is still woken by its
    child's end, with the record: the end's condition on claims is the child's own, never the
    parent's (else the parent, suspending later on an unchanged ``wake_seq``, would wait forever)."""
    parent = start(store)
    child = start(store, parent_run_id=parent, parent_pos=2)
    assert store.claim_run(parent, 1, "resume-1", {"kind": "step"})
    woken = store.get_run(parent).wake_seq
    ending = RunEnding("completed", result="7", wake=parent, wake_record=notice(parent, 2, "7"))
    assert store.finish_run(child, ending) is not None
    assert store.get_run(parent).wake_seq == woken + 1
    assert store.get_event(parent, child_end_seq(2)).data == "7"


def test_a_child_end_writes_nothing_into_an_ended_parent(store) -> None:  # type: ignore[no-untyped-def]
    parent = start(store)
    child = start(store, parent_run_id=parent, parent_pos=0)
    assert store.finish_run(parent, RunEnding("cancelled", error="cancelled")) is not None
    assert store.finish_run(child,
                            RunEnding("failed", error="boom", wake=parent, wake_record=notice(parent, 0))) is not None
    assert store.get_run(child).status == "failed"
    assert store.get_event(parent, child_end_seq(0)) is None


def test_a_chain_s_anchor_is_kept_and_names_its_latest_run(store, clock) -> None:  # type: ignore[no-untyped-def]
    key = uid("key")
    head = start(store, key=key)
    second = run_record(store, run_id=uid(), continued_from=head, key=key, chain_head=head)
    assert store.continue_run(head, second) is not None
    anchor = store.get_run(head)
    assert (anchor.status, anchor.chain_last, anchor.continued_to, anchor.retain_until) == (
        "continued", second.run_id, second.run_id, None)
    third = run_record(store, run_id=uid(), continued_from=second.run_id, key=key, chain_head=head)
    assert store.continue_run(second.run_id, third) is not None
    assert store.get_run(head).chain_last == third.run_id  # in the continuation's transaction
    middle = store.get_run(second.run_id)
    assert (middle.chain_head, middle.retain_until is not None) == (head, True)  # a middle run expires
    clock.advance(2 * LEASE_SECONDS)
    due = store.runs_to_retain(store.now(), limit=1_000_000)
    assert second.run_id in due and head not in due
    assert store.retain_run(second.run_id)
    assert not store.retain_run(head)  # not in the index while the chain lives
    kept = [i for t, i in items_of_run(store, head) if t == "idempotency" or i.get("run_id") == head]
    assert len(kept) == 2 and {ttl_of(i) for i in kept} == {None}  # the anchor and the chain's guard


def test_the_last_run_s_sweep_gives_the_anchor_its_ttl(store, clock) -> None:  # type: ignore[no-untyped-def]
    key = uid("key")
    head = start(store, key=key)
    last = run_record(store, run_id=uid(), continued_from=head, key=key, chain_head=head)
    assert store.continue_run(head, last) is not None
    assert store.put_signal(head, "go", '"left"', wake=last.run_id) is not None
    clock.advance(10)
    assert store.finish_run(last.run_id, RunEnding("completed", result="1")) is not None
    until = store.get_run(last.run_id).retain_until
    clock.advance(2 * LEASE_SECONDS)
    assert store.retain_run(last.run_id)
    assert store.get_run(head).retain_until == until
    assert head in store.runs_to_retain(store.now(), limit=1_000_000)
    assert store.retain_run(head)
    assert {ttl_of(i) for t, i in items_of_run(store, head) if t != "signals"} == {until}  # run, guard
    assert all(ttl_of(i) >= until for t, i in items_of_run(store, head) if t == "signals")  # written expiring
    assert {t for t, _ in items_of_run(store, head)} >= {"runs", "idempotency", "signals"}


def test_the_anchor_stamp_never_creates_an_anchor(store, clock) -> None:  # type: ignore[no-untyped-def]
    """A chain's last run whose anchor is gone (deleted by hand) stamps nothing of it."""
    last = start(store, chain_head=uid("gone"))
    assert store.finish_run(last, RunEnding("completed", result="1")) is not None
    clock.advance(2 * LEASE_SECONDS)
    assert store.retain_run(last)
    assert store.find_run(store.get_run(last).chain_head) is None


def test_a_signal_is_kept_under_the_anchor_and_wakes_the_current_run(store) -> None:  # type: ignore[no-untyped-def]
    head = start(store)
    current = run_record(store, run_id=uid(), continued_from=head, chain_head=head)
    assert store.continue_run(head, current) is not None
    woken = store.get_run(current.run_id).wake_seq
    sent = store.put_signal(head, "go", '"a"', wake=current.run_id)
    assert sent is not None and sent.run_id == head
    assert store.get_run(current.run_id).wake_seq == woken + 1
    assert [s.payload for s in store.signals(head, "go")] == ['"a"']
    assert store.signals(current.run_id, "go") == []
    assert store.finish_run(current.run_id, RunEnding("completed", result="1")) is not None
    assert store.put_signal(head, "go", '"b"', wake=current.run_id) is None  # nothing stored
    assert [s.payload for s in store.signals(head, "go")] == ['"a"']


def test_delete_signals_by_key_in_batches(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    keys = [store.put_signal(run_id, "go", str(i)).signal_key for i in range(30)]
    store.delete_signals(run_id, [*keys[:27], "go#0#missing"])
    assert [s.payload for s in store.signals(run_id, "go")] == ["27", "28", "29"]
    store.delete_signals(run_id, keys[:27])  # again: missing ones are fine
    store.delete_signals(run_id, [])
    assert len(store.signals(run_id, "go")) == 3
