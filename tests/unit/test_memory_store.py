"""What only the memory store has: the request interceptor, copies, its lock, no AWS imports.

Its behaviour as a Store is in tests/contract (run against DynamoDB too).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest

from workflows.core.model.records import (
    Advance,
    EventRecord,
    RunEnding,
    RunRecord,
    ScheduleRecord,
    Suspension,
    event_seq,
)
from workflows.errors import StorageError, Throttled
from workflows.memory import ManualClock, MemoryStore
from workflows.memory.tables import ConditionFailed
from workflows.settings import Settings


@pytest.fixture()
def store() -> MemoryStore:
    return MemoryStore(Settings(lease_seconds=30.0), clock=ManualClock())


def run(store: MemoryStore, run_id: str = "r1", key: str | None = None) -> RunRecord:
    return RunRecord(run_id=run_id, workflow="wf", status="pending", created_at=store.now(), idempotency_key=key)


def outcome(run_id: str = "r1", pos: int = 0) -> EventRecord:
    return EventRecord(run_id=run_id, seq=event_seq(pos), kind="step", status="completed", at=1.0, data="1")


class Recorder:
    """An interceptor that records request names and applies each request ``times`` times."""

    def __init__(self, times: int = 1, fail: BaseException | None = None, after: bool = False) -> None:
        self.names: list[str] = []
        self.times, self.fail, self.after = times, fail, after

    def __call__(self, name: str, apply: Callable[[], Any]) -> Any:
        self.names.append(name)
        if self.fail is not None and not self.after:
            raise self.fail
        result = None
        for _ in range(self.times):
            result = apply()
        if self.fail is not None:
            raise self.fail
        return result


def test_throttle_before_the_request_changes_nothing(store: MemoryStore) -> None:
    store.interceptor = Recorder(fail=Throttled("record event: throttled"))
    with pytest.raises(Throttled):
        store.record_event(outcome())
    store.interceptor = None
    assert store.read_history("r1") == []


def test_crash_after_the_write_leaves_it_written(store: MemoryStore) -> None:
    store.interceptor = Recorder(fail=ConnectionError("crashed"), after=True)
    with pytest.raises(ConnectionError):
        store.record_event(outcome())
    store.interceptor = None
    assert [e.seq for e in store.read_history("r1")] == [event_seq(0)]
    assert store.record_event(outcome()) is False  # the caller's retry finds it written


def test_lost_response_of_a_conditional_write_is_recognised_as_our_own(store: MemoryStore) -> None:
    store.interceptor = Recorder(times=2)
    # DynamoDB answers the SDK's resend with a failed condition; the request id stored with
    # the write tells the store it was its own.
    assert store.record_event(outcome()) is True
    assert store.create_run(run(store)) == ("r1", True)
    store.interceptor = None
    assert len(store.read_history("r1")) == 1 and store.get_run("r1").status == "pending"


def test_lost_response_of_a_transaction_is_recognised(store: MemoryStore) -> None:
    store.interceptor = Recorder(times=2)
    assert store.create_run(run(store, key="k")) == ("r1", True)  # the client request token
    store.interceptor = None
    assert store.run_for_key("k") == "r1"
    store.advance_run("r1", 0, {})
    store.interceptor = Recorder(times=2)
    assert store.suspend_run("r1", Suspension(1, {}), 0) is True


def test_lost_response_of_a_race_suspend_that_sends_is_recognised(store: MemoryStore) -> None:
    # suspend_run(first=True) moves the cursor onto the op, so its own retry fails the condition: its request
    # id tells it the suspend was its own, and the resume sends the race's steps.
    store.create_run(run(store))
    store.advance_run("r1", 0, {})
    store.interceptor = Recorder(times=2)
    assert store.suspend_run("r1", Suspension(1, {"kind": "first_of"}), 0, lease=True, first=True) is True
    store.interceptor = None
    # another resume
    assert store.suspend_run("r1", Suspension(1, {"kind": "first_of"}), 0, lease=True, first=True) is False


def test_requests_mirror_the_dynamodb_store(store: MemoryStore) -> None:
    store.create_run(run(store, key="k"))
    recorder = store.interceptor = Recorder()
    assert store.create_run(run(store, "r2", key="k")) == ("r1", False)
    assert recorder.names == ["create run", "read run", "read idempotency key"]
    recorder.names.clear()
    store.join_branch("j#0", 0, 2)
    store.join_branch("j#0", 0, 2)
    assert recorder.names == ["join", "join", "read join"]
    recorder.names.clear()
    store.create_schedule(ScheduleRecord(schedule_id="s", workflow="wf", spec={}, overlap="skip"))
    assert store.finish_fire("s", 1.0) is None
    assert recorder.names == ["create schedule", "finish fire", "finish fire"]


def test_conditions_raise_inside_the_request(store: MemoryStore) -> None:
    seen: list[type[BaseException]] = []

    def watch(name: str, apply: Callable[[], Any]) -> Any:
        try:
            return apply()
        except ConditionFailed as exc:
            seen.append(type(exc))
            raise

    store.record_event(outcome())
    store.interceptor = watch
    assert store.record_event(outcome()) is False
    assert seen == [ConditionFailed]


def test_no_aliasing_between_callers_and_stored_state(store: MemoryStore) -> None:
    store.create_run(run(store))
    waiting = {"kind": "step", "names": ["a"]}
    store.advance_run("r1", 0, waiting)
    waiting["names"].append("b")  # type: ignore[attr-defined]
    read = store.get_run("r1")
    assert read.waiting == {"kind": "step", "names": ["a"]}
    read.waiting["kind"] = "changed"  # type: ignore[index]
    assert store.get_run("r1").waiting == {"kind": "step", "names": ["a"]}
    spec = {"every": 60}
    created = store.create_schedule(ScheduleRecord(schedule_id="s", workflow="wf", spec=spec, overlap="skip"))
    spec["every"] = 1
    created.running.append(5.0)
    created.heads["x"] = "y"
    stored = store.get_schedule("s")
    assert (stored.spec, stored.running, stored.heads) == ({"every": 60}, [], {})


def test_an_item_over_400kb_is_refused_and_nothing_changes(store: MemoryStore) -> None:
    store.create_run(run(store))
    with pytest.raises(StorageError, match="advance run failed: ValidationException"):
        store.advance_run("r1", 0, {"blob": "x" * 450_000})
    assert store.get_run("r1").cursor == -1


def test_clock_may_be_a_callable_or_have_now() -> None:
    settings = Settings(lease_seconds=30.0)
    assert MemoryStore(settings, clock=lambda: 12.0).now() == 12.0
    clock = ManualClock(100.0)
    store = MemoryStore(settings, clock=clock)
    clock.advance(5)
    assert store.now() == 105.0 and store.settings is settings
    assert store.lease_until() == 138.0  # 135 rounded up to the 6-second bucket


def test_concurrent_writers_are_serialised(store: MemoryStore) -> None:
    store.create_run(run(store))
    store.create_schedule(ScheduleRecord(schedule_id="s", workflow="wf", spec={}, overlap="skip", next_fire_at=1.0,
                                         next_due_at=1.0))
    barrier = threading.Barrier(8)

    def race(i: int) -> tuple[bool, bool]:
        barrier.wait()
        claimed = store.claim_fire("s", 1.0, f"run-{i}", lease_until=9.0, advance=Advance(1.0, 2.0, 2.0))
        return claimed is not None, store.finish_run("r1", RunEnding("completed", result=str(i))) is not None

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(race, range(8)))
    assert sum(c for c, _ in results) == 1 and sum(f for _, f in results) == 1
    assert store.get_schedule("s").fired == 1


def test_memory_package_imports_no_aws_or_celery() -> None:
    code = ("import sys, workflows.memory\n"
            "aws = ('celery', 'kombu', 'boto3', 'botocore', 'pynamodb')\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in aws]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)
