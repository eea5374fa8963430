"""Sweeps read every shard: a backlog in early shards does not starve the later ones."""

from __future__ import annotations

import itertools
import time
import uuid

import pytest

from persistence import DynamoStore
from persistence.base import SCHEDULE_SHARDS, shard_of
from persistence.provision import create_tables
from workflows.core.model.records import RunRecord, ScheduleRecord, TimerRecord

LIMIT = 16
BACKLOG = LIMIT + 4


def ids_in_shard(prefix: str, shard: int, shards: int, count: int) -> list[str]:
    candidates = (f"{prefix}-{i}" for i in itertools.count())
    return list(itertools.islice((c for c in candidates if shard_of(c, shards) == str(shard)), count))


@pytest.fixture()
def clock() -> list[float]:
    return [time.time()]


@pytest.fixture(scope="module")
def own_settings(settings):  # type: ignore[no-untyped-def]
    """Tables of this module's own: the fake clock must not touch other tests' items. Made once
    (a table set costs seconds on moto): each test here fills a table of its own (timers, runs,
    schedules) with ids of its own."""
    own = settings.with_(table_prefix=f"f{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    return own


@pytest.fixture()
def store(own_settings, clock):  # type: ignore[no-untyped-def]
    return DynamoStore(own_settings, clock=lambda: clock[0])


def test_due_timers_reach_the_last_shard(store, clock) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    shards = store.settings.index_shards
    backlog = ids_in_shard(f"t{tag}", 0, shards, BACKLOG)
    last = ids_in_shard(f"t{tag}", shards - 1, shards, 1)
    for timer_id in backlog + last:
        store.put_timer(TimerRecord(timer_id=timer_id, kind="wake", run_id=timer_id, due_at=clock[0] - 1))
    due = [t.timer_id for t in store.due_timers(limit=LIMIT)]
    assert last[0] in due
    assert len(due) == LIMIT  # the leftover capacity still goes to the backlog


def test_stale_runs_reach_the_last_shard(store, clock) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    shards = store.settings.index_shards
    backlog = ids_in_shard(f"r{tag}", 0, shards, BACKLOG)
    last = ids_in_shard(f"r{tag}", shards - 1, shards, 1)
    for run_id in backlog + last:
        store.create_run(RunRecord(run_id=run_id, workflow="sequence", status="pending", created_at=clock[0]))
    clock[0] += store.settings.lease_seconds * 3  # every lease has expired
    stale = store.stale_runs(limit=LIMIT)
    assert last[0] in stale
    assert len(stale) == LIMIT


def test_due_schedules_reach_the_last_shard(store, clock) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    backlog = ids_in_shard(f"s{tag}", 0, SCHEDULE_SHARDS, BACKLOG)
    last = ids_in_shard(f"s{tag}", SCHEDULE_SHARDS - 1, SCHEDULE_SHARDS, 1)
    due_at = clock[0] - 1
    for schedule_id in backlog + last:
        store.create_schedule(ScheduleRecord(schedule_id=schedule_id, workflow="sequence", spec={"every": 60},
                                             overlap="skip", next_fire_at=due_at, next_due_at=due_at))
    due = [s.schedule_id for s in store.due_schedules(limit=LIMIT)]
    assert last[0] in due
    assert len(due) == LIMIT
