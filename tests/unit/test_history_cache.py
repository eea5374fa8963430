"""The per-process history cache reads only what it has not seen, and never skips an outcome."""

from __future__ import annotations

from workflows.core.model.records import EventRecord, event_seq
from workflows.core.replay.history_cache import HistoryCache


def outcome(pos: int) -> EventRecord:
    return EventRecord(run_id="r", seq=event_seq(pos), kind="step", status="completed", at=0.0, name="s")


class FakeStore:
    def __init__(self) -> None:
        self.events: list[EventRecord] = []
        self.reads: list[int] = []

    def read_history(self, run_id: str, after_seq: int = -1) -> list[EventRecord]:
        self.reads.append(after_seq)
        return [e for e in self.events if e.seq > after_seq]


def test_a_resume_queries_only_after_what_it_has_seen() -> None:
    store = FakeStore()
    cache = HistoryCache(store)  # type: ignore[arg-type]
    store.events = [outcome(0), outcome(1)]
    assert sorted(cache.load("r").outcomes) == [0, 1]
    store.events.append(outcome(2))
    assert sorted(cache.load("r").outcomes) == [0, 1, 2]
    assert store.reads == [-1, event_seq(1)]


def test_own_write_with_everything_before_it_cached_needs_no_query() -> None:
    store = FakeStore()
    cache = HistoryCache(store)  # type: ignore[arg-type]
    store.events = [outcome(0)]
    cache.load("r")
    store.events.append(outcome(1))
    cache.remember(outcome(1))
    assert sorted(cache.load("r", known_through=1).outcomes) == [0, 1]
    assert store.reads == [-1]


def test_own_write_after_a_gap_does_not_hide_the_gap() -> None:
    # Another process recorded position 0; this one recorded position 1.
    store = FakeStore()
    cache = HistoryCache(store)  # type: ignore[arg-type]
    store.events = [outcome(0), outcome(1)]
    cache.remember(outcome(1))
    history = cache.load("r", known_through=1)
    assert sorted(history.outcomes) == [0, 1]
    assert store.reads == [-1]
