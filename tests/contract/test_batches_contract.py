"""Store contract: batch items (create, claim, advance, end on their version; a lost response
recognised) and the tags of an ended run (``tag_ended_run``)."""

from __future__ import annotations

import random
from typing import Any, Callable

from workflows.core.model.batches import BatchRecord, Progress, Selection, batch_id_floor, new_batch_id
from workflows.core.model.records import RunEnding
from workflows.core.model.states import BatchState
from workflows.core.storage.retention import retain_until

from .support import start, uid


def new_batch(store: Any) -> BatchRecord:  # type: ignore[no-untyped-def]
    now = store.now()
    batch = BatchRecord(new_batch_id(now), "cancel", Selection(status="suspended", workflow=uid("wf")),
                        {"reason": "r"}, 5.0, created_at=now, updated_at=now, due_at=now)  # due at once
    store.create_batch(batch)
    return batch


def test_a_batch_is_claimed_advanced_and_ended_each_on_its_version(store, clock) -> None:  # type: ignore[no-untyped-def]
    batch = new_batch(store)
    assert store.get_batch(batch.batch_id) == batch
    assert batch.batch_id in {b.batch_id for b in store.live_batches()}
    claimed = store.claim_batch(batch, "one", store.now() + 30)
    assert claimed is not None and claimed.owner == "one"
    assert store.claim_batch(batch, "two", store.now() + 30) is None  # the version read is gone
    assert store.claim_batch(claimed, "two", store.now() + 30) is None  # its lease holds it
    advanced = store.advance_batch(claimed, "c1", Progress(3, 2, 0, 1, (("r1", "boom"),)), store.now() + 1)
    assert advanced is not None and store.get_batch(batch.batch_id) == advanced
    assert (advanced.cursor, advanced.counts(), advanced.errors, advanced.owner) == (
        "c1", {"selected": 3, "done": 2, "failed": 0, "skipped": 1}, [["r1", "boom"]], None)
    assert store.advance_batch(claimed, "c2", Progress(1, 1), store.now()) is None  # a stale driver
    assert store.claim_batch(advanced, "two", store.now() + 30) is None  # not due yet (the throttle)
    clock.advance(1)
    again = store.claim_batch(advanced, "two", store.now() + 30)
    assert again is not None
    ended = store.end_batch(again, BatchState.COMPLETED, Progress(1, 1))
    assert ended is not None and ended.state == BatchState.COMPLETED and ended.done == 3
    assert ended.retain_until == retain_until(ended.ended_at, store.settings)
    assert store.get_batch(batch.batch_id) == ended
    assert batch.batch_id not in {b.batch_id for b in store.live_batches()}
    assert batch.batch_id in {b.batch_id for b in store.newest_batches(1000, before=new_batch_id(store.now() + 1))}
    assert store.end_batch(again, BatchState.COMPLETED) is None  # ended already


def test_the_newest_batches_live_and_ended_come_newest_first_a_page_at_a_time(store, clock) -> None:  # type: ignore[no-untyped-def]
    clock.advance(random.uniform(1e9, 2e9))  # an instant of this test's own: other tests' batches are older
    first, second, third = new_batch(store), None, None
    clock.advance(1)
    second = new_batch(store)
    clock.advance(1)
    third = new_batch(store)
    claimed = store.claim_batch(second, "me", store.now() + 30)
    # the middle one ends: the two partitions interleave
    assert store.end_batch(claimed, BatchState.COMPLETED) is not None
    top = batch_id_floor(store.now() + 1)
    page = store.newest_batches(2, before=top)
    assert [(b.batch_id, b.state) for b in page] == [(third.batch_id, BatchState.RUNNING),
                                                     (second.batch_id, BatchState.COMPLETED)]
    rest = store.newest_batches(2, before=page[-1].batch_id)
    assert [b.batch_id for b in rest][:1] == [first.batch_id]
    assert all(b.batch_id < first.batch_id for b in rest[1:])


def test_a_retried_batch_write_recognises_its_own_request(store, clock) -> None:  # type: ignore[no-untyped-def]
    batch = new_batch(store)
    if not hasattr(store, "interceptor"):  # DynamoDB: botocore's own retries are not reachable here
        return
    def twice(name: str, apply: Callable[[], Any]) -> Any:
        apply()
        return apply()

    store.interceptor = twice
    try:
        claimed = store.claim_batch(batch, "me", store.now() + 30)
        assert claimed is not None
        advanced = store.advance_batch(claimed, "c", Progress(1, 1), store.now())
        assert advanced is not None and advanced.done == 1
        assert store.end_batch(advanced, BatchState.COMPLETED) is not None
    finally:
        store.interceptor = None
    assert store.get_batch(batch.batch_id).done == 1


def test_an_ended_runs_tags_change_with_their_index_items(store, clock) -> None:  # type: ignore[no-untyped-def]
    value = uid("v")
    run_id = start(store, tags={"t": value})
    run = store.get_run(run_id)
    assert not store.tag_ended_run(run, {"t": value, "triage": "q3"})  # live: its workflow's tags
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    run = store.get_run(run_id)
    assert store.tag_ended_run(run, {"t": value, "triage": "q3"})
    assert store.get_run(run_id).tags == {"t": value, "triage": "q3"}
    assert [r.run_id for r in store.list_runs(tag=("triage", "q3"), limit=1000) if r.run_id == run_id] == [run_id]
    assert not store.tag_ended_run(run, {"t": value, "triage": "q4"})  # the tags read are gone
    assert store.get_run(run_id).tags == {"t": value, "triage": "q3"}
