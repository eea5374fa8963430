"""A schedule whose fires are all past stays due while runs of it run or wait in its
buffer: a buffered fire starts even when the run-end listener of the run before it was
lost (a worker died between the run's end and the release). Found by the simulator."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from beat.cron import ScheduleSpec
from tests.replay import replay_flows  # noqa: F401 - registers the workflow
from workflows.core.background.firing import fire_due_schedules, fire_run_id, next_after
from workflows.core.engine import Engine
from workflows.core.model.records import RunEnding, ScheduleRecord
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0)


def test_a_buffered_last_fire_starts_though_the_run_end_listener_was_lost() -> None:
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    engine = Engine(store, RecordingTransport(), SETTINGS, clock=clock)
    start = clock.now()
    at = lambda epoch: datetime.fromtimestamp(epoch, tz=timezone.utc)  # noqa: E731
    spec = ScheduleSpec.build(every=60.0, start_at=at(start + 1), end_at=at(start + 61))
    record = ScheduleRecord(schedule_id="nightly", workflow="replay_ten", spec=spec.to_dict(), overlap="buffer_one",
                            args=json.dumps([[1], {}]), created_at=start, updated_at=start)
    record.next_fire_at, record.next_due_at = next_after(spec, "nightly", start)
    store.create_schedule(record)

    clock.advance(2)
    assert fire_due_schedules(engine) == 1  # the first fire starts its run
    first = fire_run_id("nightly", start + 1)
    clock.advance(60)
    assert fire_due_schedules(engine) == 0  # the last fire is buffered: the first run still runs
    assert store.find_schedule("nightly").buffered == [start + 61]
    store.finish_run(first, RunEnding("completed", result="2"))  # its end, with no listener to release the fire

    clock.advance(SETTINGS.lease_seconds + 1)
    fire_due_schedules(engine)
    assert store.find_run(fire_run_id("nightly", start + 61)) is not None  # the buffered fire started
    assert store.find_schedule("nightly").buffered == []
