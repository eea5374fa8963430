"""Store contract: set_event and write_stream (the op's record and its item, one transaction, only while
live), the reads of the items, and their retention with the run."""

from __future__ import annotations

import math

from workflows.core.model.records import EventRecord, RunEnding, event_seq
from workflows.core.ops.events import EVENT_SEQ_BASE, EVENT_SEQ_SPAN, event_value_seq, stream_seq
from workflows.settings import DEFAULT_RETENTION_SECONDS

from .conftest import LEASE_SECONDS
from .retention_items import items_of_run, ttl_of
from .support import start


def op(store, run_id: str, pos: int, kind: str, data: str, name: str | None = None) -> EventRecord:  # type: ignore[no-untyped-def]
    return EventRecord(run_id=run_id, seq=event_seq(pos), kind=kind, status="set", at=store.now(), name=name,
                       data=data)


def latest(store, run_id: str, key: str, data: str) -> EventRecord:  # type: ignore[no-untyped-def]
    return EventRecord(run_id=run_id, seq=event_value_seq(key), kind="event", status="latest", at=store.now(),
                       name=key, data=data)


def entry(store, run_id: str, offset: int, data: str) -> EventRecord:  # type: ignore[no-untyped-def]
    return EventRecord(run_id=run_id, seq=stream_seq(offset), kind="stream", status="appended", at=store.now(),
                       data=data)


def values(store, run_id: str) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    found = store.read_history(run_id, after_seq=EVENT_SEQ_BASE - 1, until_seq=EVENT_SEQ_BASE + EVENT_SEQ_SPAN - 1)
    return {r.name: r.data for r in found}


def stream(store, run_id: str, offset: int = 0) -> list[str | None]:  # type: ignore[no-untyped-def]
    return [r.data for r in store.read_history(run_id, after_seq=stream_seq(offset) - 1, until_seq=stream_seq(999))]


def test_set_event_records_the_op_and_keeps_the_latest_value_once_and_only_while_live(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.set_event(op(store, run_id, 0, "event", '"a"', "stage"), latest(store, run_id, "stage", '"a"'))
    assert store.set_event(op(store, run_id, 1, "event", "2", "n"), latest(store, run_id, "n", "2"))
    assert store.set_event(op(store, run_id, 2, "event", '"b"', "stage"), latest(store, run_id, "stage", '"b"'))
    assert values(store, run_id) == {"stage": '"b"', "n": "2"}
    stored = store.get_event(run_id, event_value_seq("stage"))
    assert stored is not None and (stored.name, stored.data) == ("stage", '"b"')
    # the slot is taken (a duplicate resume, or a retry of a request that applied): nothing written
    assert not store.set_event(op(store, run_id, 2, "event", '"c"', "stage"), latest(store, run_id, "stage", '"c"'))
    assert values(store, run_id)["stage"] == '"b"'
    assert [e.seq for e in store.read_history(run_id)] == [event_seq(p) for p in range(3)]  # items are not ops
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    assert not store.set_event(op(store, run_id, 3, "event", '"d"', "stage"), latest(store, run_id, "stage", '"d"'))
    assert store.get_outcome(run_id, 3) is None and values(store, run_id)["stage"] == '"b"'


def test_write_stream_appends_once_and_only_while_live(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    for offset in range(3):
        assert store.write_stream(op(store, run_id, offset * 2, "stream", str(offset)), entry(store, run_id, offset,
                                                                                             str(offset)))
    assert stream(store, run_id) == ["0", "1", "2"] and stream(store, run_id, 1) == ["1", "2"]
    assert not store.write_stream(op(store, run_id, 4, "stream", "9"), entry(store, run_id, 3, "9"))  # slot taken
    assert not store.write_stream(op(store, run_id, 6, "stream", "9"), entry(store, run_id, 2, "9"))  # entry taken
    assert stream(store, run_id) == ["0", "1", "2"] and store.get_outcome(run_id, 6) is None
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    assert not store.write_stream(op(store, run_id, 8, "stream", "3"), entry(store, run_id, 3, "3"))
    assert stream(store, run_id) == ["0", "1", "2"]


def test_event_and_stream_items_expire_with_their_run(store, clock) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    assert store.set_event(op(store, run_id, 0, "event", "1", "k"), latest(store, run_id, "k", "1"))
    assert store.write_stream(op(store, run_id, 1, "stream", "2"), entry(store, run_id, 0, "2"))
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    expected = math.ceil(store.get_run(run_id).ended_at + DEFAULT_RETENTION_SECONDS)
    history = [i for t, i in items_of_run(store, run_id) if t == "history"]
    written = [ttl_of(i) for i in history]  # expiring from their write: later than the run's TTL
    assert len(history) == 4 and all(ttl is not None and ttl >= expected for ttl in written)
    clock.advance(2 * LEASE_SECONDS)
    assert store.retain_run(run_id)
    assert [ttl_of(i) for t, i in items_of_run(store, run_id) if t == "history"] == written  # left as they were
