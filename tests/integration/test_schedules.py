"""Schedules against the moto server: the store, beat's tick, overlap bookkeeping and the API.

Each test fires schedules by calling beat's tick with an explicit ``now`` (no waiting),
on tables of their own prefix, so the session's worker and beat never touch them, and
with a transport that records messages instead of sending them.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator
from zoneinfo import ZoneInfo

import pytest

from beat import declared
from persistence import get_store
from tests.e2e import schedule_flows as flows
from workflows import (
    InvalidSchedule,
    RunStatus,
    ScheduleAlreadyExists,
    ScheduleNotFound,
    UnknownWorkflow,
    backfill_schedule,
    create_schedule,
    delete_schedule,
    get_schedule,
    list_schedules,
    pause_schedule,
    resume_schedule,
    trigger_schedule,
    update_schedule,
)
from workflows.core.background import firing as beat
from workflows.core.model.records import Advance, RunEnding
from workflows.core.replay.commands import RunEnd
from workflows.errors import SerializationError
from workflows.memory import RecordingTransport
from workflows.runtime import get_engine
from workflows.settings import Settings, configure, get_settings

UTC = timezone.utc


@contextlib.contextmanager
def isolated(settings: Settings, suffix: str) -> Iterator[Settings]:
    """Make settings with their own tables active, and a recording transport; restore (and drop them) after."""
    previous = get_settings()
    mine = settings.with_(table_prefix=f"{settings.table_prefix}{suffix}-")
    models = get_store(mine).m.all()  # the store's own models: their clients are made once
    for model in models:
        model.create_table(wait=True, billing_mode="PAY_PER_REQUEST")
    configure(mine)
    get_engine().transport = RecordingTransport()  # the engine of these settings only
    try:
        yield mine
    finally:
        configure(previous)
        for model in models:
            model.delete_table()


@pytest.fixture(scope="module")
def sched_settings(settings: Settings) -> Iterator[Settings]:
    with isolated(settings, "sch") as mine:
        yield mine


@pytest.fixture()
def engine(sched_settings: Settings):  # type: ignore[no-untyped-def]
    engine = get_engine()
    assert engine.settings == sched_settings
    beat.ensure_listener(engine)
    return engine


@pytest.fixture(autouse=True)
def no_schedules_left(engine) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """Delete what a test left, so no schedule of one test is due in the next one's ticks."""
    yield
    for info in list_schedules(limit=1000):
        engine.store.delete_schedule(info.schedule_id)


def sid() -> str:
    return f"it-{uuid.uuid4().hex[:10]}"


def hourly(**options: Any) -> Any:
    """A schedule whose fires are an hour apart, the first one far from the real clock."""
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    options.setdefault("overlap", "skip")
    return create_schedule(flows.scheduled_slow, every="1h", start_at=start, args=["it", 1.0],
                           schedule_id=sid(), **options)


def fire_at(info: Any, k: int) -> float:
    """The epoch time of the k-th fire (0-based) of an ``hourly()`` schedule."""
    return info.start_at.timestamp() + 3600 * k


def run_of(engine, info: Any, k: int) -> Any:  # type: ignore[no-untyped-def]
    """The run of the k-th fire of an ``hourly()`` schedule, or None."""
    return engine.store.find_run(beat.fire_run_id(info.schedule_id, fire_at(info, k)))


def tick(engine, now: float) -> int:  # type: ignore[no-untyped-def]
    return beat.fire_due_schedules(engine, now=now)


def end_run(engine, run_id: str, status: str = "completed") -> None:  # type: ignore[no-untyped-def]
    run = engine.store.get_run(run_id)
    assert engine.end(run, RunEnd(RunStatus(status), error=None if status == "completed" else status))


# -- definitions ----------------------------------------------------------------------------------
def test_create_get_list_update_pause_resume_delete(engine) -> None:
    info = create_schedule("scheduled_tick", every="2s", args=["a"], schedule_id=sid(), overlap="buffer_all")
    assert (info.workflow, info.every, info.cron, info.overlap, info.state) == ("scheduled_tick", 2.0, None,
                                                                                  "buffer_all", "active")
    assert info.args == ["a"] and info.kwargs == {}
    assert info.next_fire_at is not None and info.next_fire_at.timestamp() % 2 == 0
    assert get_schedule(info.schedule_id) == info
    listed = [s.schedule_id for s in list_schedules(workflow=flows.scheduled_tick, limit=1000)]
    assert info.schedule_id in listed

    updated = update_schedule(info.schedule_id, cron="30 9 * * 1-5", timezone="Europe/Paris", kwargs={"x": 1})
    assert (updated.cron, updated.every, updated.timezone) == ("30 9 * * 1-5", None, "Europe/Paris")
    assert updated.kwargs == {"x": 1} and updated.args == ["a"]
    assert updated.next_fire_at.astimezone(ZoneInfo("Europe/Paris")).strftime("%H:%M") == "09:30"

    paused = pause_schedule(info.schedule_id)
    assert paused.state == "paused"
    assert info.schedule_id not in [s.schedule_id for s in engine.store.due_schedules(now=4e9, limit=10000)]
    assert info.schedule_id in [s.schedule_id for s in list_schedules(state="paused", limit=1000)]
    resumed = resume_schedule(info.schedule_id)
    assert resumed.state == "active" and resumed.next_fire_at > datetime.now(UTC)
    assert info.schedule_id in [s.schedule_id for s in engine.store.due_schedules(now=4e9, limit=10000)]

    delete_schedule(info.schedule_id)
    with pytest.raises(ScheduleNotFound):
        get_schedule(info.schedule_id)
    with pytest.raises(ScheduleNotFound):
        delete_schedule(info.schedule_id)


def test_list_pages_with_a_cursor(engine) -> None:
    prefix = sid()
    for i in range(5):
        create_schedule(flows.scheduled_tick, every=60, args=["p"], schedule_id=f"{prefix}-{i}")
    seen, cursor = [], None
    while True:
        page = list_schedules(limit=2, cursor=cursor)
        seen += [s.schedule_id for s in page if s.schedule_id.startswith(prefix)]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert seen == [f"{prefix}-{i}" for i in range(5)]
    for i in range(5):
        delete_schedule(f"{prefix}-{i}")


@pytest.mark.parametrize("options, match", [
    ({"cron": "61 * * * *"}, "61"),
    ({"cron": "* * * *"}, "5 fields"),
    ({"cron": "*/5 * * * *", "timezone": "Mars/Olympus_Mons"}, "Mars/Olympus_Mons"),
    ({"every": 0}, "every"),
    ({"every": -5}, "every"),
    ({"every": "0s"}, "every"),
    ({"every": timedelta(seconds=-1)}, "every"),
    ({"every": "soon"}, "soon"),
    ({"cron": "* * * * *", "every": 5}, "exactly one"),
    ({}, "exactly one"),
    ({"every": 5, "overlap": "sometimes"}, "sometimes"),
    ({"every": 5, "catchup_window": -1}, "catchup_window"),
    ({"every": 5, "start_at": datetime(2030, 1, 1)}, "timezone-aware"),
    ({"every": 5, "start_at": datetime(2030, 1, 2, tzinfo=UTC), "end_at": datetime(2030, 1, 1, tzinfo=UTC)},
     "before end_at"),
    ({"every": 5, "schedule_id": "has space"}, "has space"),
    ({"every": 5, "schedule_id": ""}, "invalid schedule id"),
    ({"every": 5, "args": "abc"}, "args must be a list"),
])
def test_bad_input_raises_invalid_schedule_and_stores_nothing(engine, options, match) -> None:
    options = dict(options)
    schedule_id = options.pop("schedule_id", sid())
    with pytest.raises(InvalidSchedule, match=match):
        create_schedule(flows.scheduled_tick, schedule_id=schedule_id, **options)
    if schedule_id and " " not in schedule_id:
        with pytest.raises(ScheduleNotFound):
            get_schedule(schedule_id)


def test_other_bad_input_raises_typed_errors(engine) -> None:
    with pytest.raises(UnknownWorkflow, match="no_such_workflow"):
        create_schedule("no_such_workflow", every=5)
    with pytest.raises(SerializationError):
        create_schedule(flows.scheduled_tick, every=5, args=[object()])
    info = create_schedule(flows.scheduled_tick, every=5, args=["x"], schedule_id=sid())
    with pytest.raises(ScheduleAlreadyExists):
        create_schedule(flows.scheduled_tick, every=5, args=["x"], schedule_id=info.schedule_id)
    with pytest.raises(InvalidSchedule):
        update_schedule(info.schedule_id, cron="not a cron")
    with pytest.raises(InvalidSchedule):
        update_schedule(info.schedule_id, overlap="never")
    assert get_schedule(info.schedule_id) == info  # failed updates changed nothing
    now = datetime.now(UTC)
    with pytest.raises(InvalidSchedule, match="after its end"):
        backfill_schedule(info.schedule_id, now, now - timedelta(hours=1))
    with pytest.raises(InvalidSchedule, match="timezone-aware"):
        backfill_schedule(info.schedule_id, datetime(2030, 1, 1), datetime(2030, 1, 2))
    with pytest.raises(InvalidSchedule, match="more than"):
        backfill_schedule(info.schedule_id, now - timedelta(days=7), now)
    for call in (get_schedule, pause_schedule, resume_schedule, delete_schedule, trigger_schedule):
        with pytest.raises(ScheduleNotFound):
            call("it-missing-" + uuid.uuid4().hex)
    with pytest.raises(ScheduleNotFound):
        update_schedule("it-missing", every=3)
    with pytest.raises(ScheduleNotFound):
        backfill_schedule("it-missing", now - timedelta(hours=1), now)
    delete_schedule(info.schedule_id)


# -- firing -----------------------------------------------------------------------------------------
def test_a_fire_starts_one_run_recording_schedule_and_fire_time(engine) -> None:
    info = hourly()
    assert tick(engine, fire_at(info, 0) - 1) == 0
    assert tick(engine, fire_at(info, 0) + 1) == 1
    run = run_of(engine, info, 0)
    assert (run.schedule_id, run.fire_time, run.workflow) == (info.schedule_id, fire_at(info, 0), "scheduled_slow")
    assert run.idempotency_key == beat.fire_key(info.schedule_id, fire_at(info, 0))
    after = get_schedule(info.schedule_id)
    assert after.next_fire_at.timestamp() == fire_at(info, 1)
    assert after.last_run_id == run.run_id and after.fired == 1
    assert [f.timestamp() for f in after.running] == [fire_at(info, 0)]
    assert tick(engine, fire_at(info, 0) + 2) == 0  # nothing more is due
    delete_schedule(info.schedule_id)


def test_ten_concurrent_beats_start_each_fire_once(engine) -> None:
    info = hourly(overlap="allow_all")
    for k in range(3):
        barrier = threading.Barrier(10)
        started: list[int] = []

        def beat_tick(barrier: threading.Barrier = barrier, started: list[int] = started, k: int = k) -> None:
            barrier.wait()
            started.append(tick(engine, fire_at(info, k) + 1))

        threads = [threading.Thread(target=beat_tick) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(started) == 1, started
    assert all(run_of(engine, info, k) is not None for k in range(3))
    # Not asserted: that exactly one claim won. moto applies a conditional update without a
    # lock, so two concurrent claims of one fire can both pass their condition there (DynamoDB
    # serialises writes to an item). Even then the derived run id and idempotency key start
    # one run, which is what is asserted above.
    delete_schedule(info.schedule_id)


def test_a_claim_whose_beat_died_is_finished_after_its_lease(engine) -> None:
    info = hourly()
    fire = fire_at(info, 0)
    # A beat claims the fire, then dies before starting the run.
    claimed = engine.store.claim_fire(info.schedule_id, fire, beat.fire_run_id(info.schedule_id, fire),
                                      lease_until=fire + 10,
                                      advance=Advance(fire, fire_at(info, 1), fire_at(info, 1)))
    assert claimed is not None and claimed.pending == fire
    assert tick(engine, fire + 5) == 0  # the lease still runs: nobody touches the claim
    assert run_of(engine, info, 0) is None
    assert tick(engine, fire + 11) == 1  # lease over: the next tick starts the run
    assert run_of(engine, info, 0) is not None
    after = engine.store.get_schedule(info.schedule_id)
    assert after.pending is None and after.due_at == fire_at(info, 1)
    # A replay of the same fire (two beats, a redelivered claim) finds the same run.
    engine.store.claim_fire(info.schedule_id, fire, "x", lease_until=fire + 100)
    assert beat.start_claimed(engine, engine.store.get_schedule(info.schedule_id), fire)[0] == beat.DUPLICATE
    delete_schedule(info.schedule_id)


def test_catch_up_default_starts_only_the_latest_missed_fire(engine) -> None:
    info = hourly(overlap="allow_all")
    assert tick(engine, fire_at(info, 5) + 60) == 1  # beat was down through fires 0..5
    assert [run_of(engine, info, k) is not None for k in range(6)] == [False] * 5 + [True]
    assert get_schedule(info.schedule_id).next_fire_at.timestamp() == fire_at(info, 6)
    delete_schedule(info.schedule_id)


def test_catch_up_window_starts_the_fires_inside_it(engine) -> None:
    info = hourly(overlap="allow_all", catchup_window="2h30m")
    assert tick(engine, fire_at(info, 5) + 60) == 3  # fires 3, 4, 5 are within 2h30m
    assert [run_of(engine, info, k) is not None for k in range(6)] == [False] * 3 + [True] * 3
    later = hourly(overlap="allow_all", catchup_window=30)
    assert tick(engine, fire_at(later, 2) + 60) == 0  # every missed fire is older than 30 s
    assert get_schedule(later.schedule_id).next_fire_at.timestamp() == fire_at(later, 3)
    for schedule in (info, later):
        delete_schedule(schedule.schedule_id)


# -- overlap policies -------------------------------------------------------------------------------
def fire_three(engine, info: Any) -> list[Any]:  # type: ignore[no-untyped-def]
    """Fire 0, 1, 2 while run 0 keeps running; return the runs of the three fires (None: not started)."""
    for k in range(3):
        tick(engine, fire_at(info, k) + 1)
    return [run_of(engine, info, k) for k in range(3)]


def test_skip_skips_fires_while_a_run_runs(engine) -> None:
    info = hourly(overlap="skip")
    runs = fire_three(engine, info)
    assert [r is not None for r in runs] == [True, False, False]
    assert get_schedule(info.schedule_id).skipped == 2
    end_run(engine, runs[0].run_id, "failed")  # any ending frees the schedule
    assert get_schedule(info.schedule_id).running == []
    assert tick(engine, fire_at(info, 3) + 1) == 1
    delete_schedule(info.schedule_id)


def test_buffer_one_keeps_one_fire_for_when_the_run_ends(engine) -> None:
    info = hourly(overlap="buffer_one")
    runs = fire_three(engine, info)
    assert [r is not None for r in runs] == [True, False, False]
    state = get_schedule(info.schedule_id)
    assert [f.timestamp() for f in state.buffered] == [fire_at(info, 1)] and state.skipped == 1
    end_run(engine, runs[0].run_id, "timed_out")
    assert run_of(engine, info, 1) is not None  # the buffered fire started when run 0 ended
    state = get_schedule(info.schedule_id)
    assert state.buffered == [] and [f.timestamp() for f in state.running] == [fire_at(info, 1)]
    delete_schedule(info.schedule_id)


def test_buffer_all_runs_every_fire_one_after_the_other(engine) -> None:
    info = hourly(overlap="buffer_all")
    runs = fire_three(engine, info)
    assert [r is not None for r in runs] == [True, False, False]
    assert len(get_schedule(info.schedule_id).buffered) == 2
    end_run(engine, runs[0].run_id)
    assert run_of(engine, info, 1) is not None and run_of(engine, info, 2) is None
    end_run(engine, run_of(engine, info, 1).run_id, "cancelled")
    assert run_of(engine, info, 2) is not None
    end_run(engine, run_of(engine, info, 2).run_id)
    state = get_schedule(info.schedule_id)
    assert (state.running, state.buffered, state.skipped, state.fired) == ([], [], 0, 3)
    delete_schedule(info.schedule_id)


def test_cancel_other_cancels_the_run_and_starts_the_fire_once_it_ended(engine) -> None:
    info = hourly(overlap="cancel_other")
    tick(engine, fire_at(info, 0) + 1)
    tick(engine, fire_at(info, 1) + 1)
    first = run_of(engine, info, 0)
    assert first.cancel_requested and run_of(engine, info, 1) is None
    engine.cancel_now(engine.store.get_run(first.run_id))  # what the worker does when it resumes it
    assert run_of(engine, info, 1) is not None
    delete_schedule(info.schedule_id)


def test_terminate_other_cancels_the_run_and_starts_the_fire_at_once(engine) -> None:
    info = hourly(overlap="terminate_other")
    tick(engine, fire_at(info, 0) + 1)
    tick(engine, fire_at(info, 1) + 1)
    assert run_of(engine, info, 0).cancel_requested and run_of(engine, info, 1) is not None
    delete_schedule(info.schedule_id)


def test_allow_all_starts_every_fire(engine) -> None:
    info = hourly(overlap="allow_all")
    runs = fire_three(engine, info)
    assert all(runs)
    assert len(get_schedule(info.schedule_id).running) == 3
    for run in runs:
        end_run(engine, run.run_id)
    assert get_schedule(info.schedule_id).running == []
    delete_schedule(info.schedule_id)


def test_a_continue_as_new_chain_is_one_running_run(engine) -> None:
    info = hourly(overlap="skip")
    tick(engine, fire_at(info, 0) + 1)
    first = run_of(engine, info, 0)
    successor = engine.new_run_record(f"{first.run_id}-next", first.workflow, first.args, schedule_id=info.schedule_id,
                               fire_time=first.fire_time, continued_from=first.run_id)
    engine.store.create_run(successor)
    assert engine.end(first, RunEnd(RunStatus.CONTINUED, continued_to=successor.run_id))
    assert len(get_schedule(info.schedule_id).running) == 1  # the chain still runs
    tick(engine, fire_at(info, 1) + 1)
    assert run_of(engine, info, 1) is None  # skipped: the chain runs
    end_run(engine, successor.run_id)
    assert get_schedule(info.schedule_id).running == []
    delete_schedule(info.schedule_id)


def test_a_run_end_the_listener_missed_is_settled_at_the_next_fire(engine) -> None:
    info = hourly(overlap="skip")
    tick(engine, fire_at(info, 0) + 1)
    first = run_of(engine, info, 0)
    engine.store.finish_run(first.run_id, RunEnding("completed"))  # ended without the listener (its worker died)
    tick(engine, fire_at(info, 1) + 1)
    assert run_of(engine, info, 1) is not None
    delete_schedule(info.schedule_id)


def test_pause_stops_fires_and_resume_does_not_backfill(engine) -> None:
    info = hourly(overlap="allow_all")
    pause_schedule(info.schedule_id)
    assert tick(engine, fire_at(info, 3) + 1) == 0
    resumed = resume_schedule(info.schedule_id)
    assert resumed.next_fire_at > datetime.now(UTC)
    assert not any(run_of(engine, info, k) for k in range(4))
    delete_schedule(info.schedule_id)


# -- by hand ----------------------------------------------------------------------------------------
def test_trigger_fires_now_under_the_policy(engine) -> None:
    info = hourly(overlap="skip")
    run = trigger_schedule(info.schedule_id)
    record = engine.store.get_run(run.run_id)
    assert record.schedule_id == info.schedule_id and abs(record.fire_time - datetime.now(UTC).timestamp()) < 60
    assert trigger_schedule(info.schedule_id) is None  # skip: a run is running
    assert trigger_schedule(info.schedule_id, overlap="allow_all") is not None
    assert get_schedule(info.schedule_id).next_fire_at.timestamp() == fire_at(info, 0)  # timetable untouched
    delete_schedule(info.schedule_id)


def test_backfill_starts_each_fire_time_once(engine) -> None:
    began = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=10)
    info = create_schedule(flows.scheduled_slow, every="1h", start_at=began, args=["it", 1.0], schedule_id=sid())
    start, end = began, began + timedelta(hours=4)
    assert backfill_schedule(info.schedule_id, start, end, overlap="allow_all") == 5
    assert backfill_schedule(info.schedule_id, start, end, overlap="allow_all") == 0  # already started
    assert all(run_of(engine, info, k) is not None for k in range(5))
    # Under the schedule's own policy (skip) nothing starts while those runs run.
    assert backfill_schedule(info.schedule_id, end, end + timedelta(hours=2)) == 0
    delete_schedule(info.schedule_id)


def test_declared_schedules_are_synced_once(engine) -> None:
    schedule_id = declared.declared_schedule_id("new_year_report")
    engine.store.delete_schedule(schedule_id)
    assert declared.sync_declared_schedules() >= 1
    info = get_schedule(schedule_id)
    assert (info.cron, info.timezone, info.overlap, info.declared) == ("0 0 1 1 *", "Europe/Paris", "buffer_one", True)
    assert info.next_fire_at.astimezone(ZoneInfo("Europe/Paris")).strftime("%m-%d %H:%M") == "01-01 00:00"
    pause_schedule(schedule_id)
    assert declared.sync_declared_schedules() == 0
    assert get_schedule(schedule_id).state == "paused"  # an operator's pause survives the sync


# -- cost -------------------------------------------------------------------------------------------
class RequestCounter:
    """Counts the HTTP requests every DynamoDB client of a store sends (botocore event hooks)."""

    def __init__(self, store: Any) -> None:
        self.requests: Counter[str] = Counter()
        self.query_items: list[tuple[int, int]] = []
        connections = [model._get_connection().connection for model in store.m.all()] + [store.connection]
        self.clients = list({id(c.client): c.client for c in connections}.values())

    def _sent(self, event_name: str, **_: Any) -> None:
        self.requests[event_name.rsplit(".", 1)[-1]] += 1

    def _answered(self, event_name: str, parsed: dict[str, Any], **_: Any) -> None:
        if event_name.endswith(".Query"):
            self.query_items.append((parsed.get("Count", 0), parsed.get("ScannedCount", 0)))

    def __enter__(self) -> RequestCounter:
        for client in self.clients:
            client.meta.events.register("before-send.dynamodb.*", self._sent)
            client.meta.events.register("after-call.dynamodb.*", self._answered)
        return self

    def __exit__(self, *exc: Any) -> None:
        for client in self.clients:
            client.meta.events.unregister("before-send.dynamodb.*", self._sent)
            client.meta.events.unregister("after-call.dynamodb.*", self._answered)


#: Schedules of the tick-cost test, 5 of them due: enough that a Scan or an unbounded read shows
#: in the counts (the counts, not the size, are the test; a thousand cost 10 s on moto).
MANY = 300


def test_a_tick_reads_only_the_due_schedules_among_many(settings: Settings, engine) -> None:
    soon = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)

    def create(i: int) -> Any:
        start = soon if i % (MANY // 5) == 0 else soon + timedelta(days=30)  # 5 of them fire tomorrow
        return create_schedule(flows.scheduled_tick, every="1h", start_at=start, args=[f"c{i}"],
                               schedule_id=f"cost-{i:04d}")

    with isolated(settings, "cnt"):  # tables of their own: only these schedules
        engine = get_engine()
        beat.ensure_listener(engine)
        began = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            created = list(pool.map(create, range(MANY)))
        assert len(created) == MANY
        print(f"\n{MANY} schedules created in {time.monotonic() - began:.1f}s")
        with RequestCounter(engine.store) as idle:
            assert tick(engine, soon.timestamp() - 1) == 0
        with RequestCounter(engine.store) as busy:
            assert tick(engine, soon.timestamp() + 1) == 5

        shards = beat_shards()
        print(f"idle tick: {dict(idle.requests)}; tick with 5 due of {MANY}: {dict(busy.requests)}; "
              f"query pages (count, scanned): {busy.query_items}")
        assert idle.requests == Counter({"Query": shards})  # nothing due: one Query per shard, nothing read
        assert sum(n for n, _ in idle.query_items) == 0
        # Due ones only: the Queries read 5 index entries in all, one BatchGet reads the 5 schedules,
        # then each fire costs a claim, a run creation (a transaction) and the claim's close.
        assert sum(n for n, _ in busy.query_items) == sum(s for _, s in busy.query_items) == 5
        assert busy.requests == Counter({"Query": shards, "BatchGetItem": 1, "UpdateItem": 10,
                                         "TransactWriteItems": 5})
        assert "Scan" not in busy.requests


def beat_shards() -> int:
    from persistence.base import SCHEDULE_SHARDS

    return SCHEDULE_SHARDS


# -- command line -----------------------------------------------------------------------------------
def test_command_line(engine, capsys) -> None:
    from workflows.cli.commands import main

    schedule_id = sid()
    start = (datetime.now(UTC) - timedelta(hours=5)).replace(microsecond=0)
    assert main(["schedules", "create", "scheduled_tick", "--every", "1h", "--id", schedule_id, "--overlap",
                 "allow_all", "--start-at", start.isoformat(), "--args", '["cli"]']) == 0
    assert f"created schedule {schedule_id}" in capsys.readouterr().out
    assert main(["schedules", "list", "--workflow", "scheduled_tick"]) == 0
    assert schedule_id in capsys.readouterr().out
    assert main(["schedules", "show", schedule_id]) == 0
    shown = capsys.readouterr().out
    assert "every 3600s" in shown and "allow_all" in shown and '["cli"]' in shown
    assert main(["schedules", "trigger", schedule_id]) == 0
    assert "started run" in capsys.readouterr().out
    assert main(["schedules", "backfill", schedule_id, "--start", start.isoformat(), "--end",
                 (start + timedelta(hours=1)).isoformat()]) == 0
    assert "2 fire(s)" in capsys.readouterr().out
    assert main(["schedules", "pause", schedule_id]) == 0
    assert get_schedule(schedule_id).state == "paused"
    assert main(["schedules", "resume", schedule_id]) == 0
    assert get_schedule(schedule_id).state == "active"
    assert main(["schedules", "delete", schedule_id]) == 0
    capsys.readouterr()

    assert main(["schedules", "show", schedule_id]) == 1
    assert capsys.readouterr().err.startswith(f"error: ScheduleNotFound: no schedule with id '{schedule_id}'")
    assert main(["schedules", "create", "scheduled_tick", "--cron", "99 * * * *"]) == 1
    assert capsys.readouterr().err.startswith("error: InvalidSchedule: ")
    assert main(["schedules", "create", "nope", "--every", "5s"]) == 1
    assert capsys.readouterr().err.startswith("error: UnknownWorkflow: ")
    assert main(["schedules", "create", "scheduled_tick", "--every", "5s", "--args", "{"]) == 2  # a usage error
    assert "--args is not valid JSON" in capsys.readouterr().err
