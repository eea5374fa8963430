"""A write applied whose response is lost (the SDK retries it, the retry fails its condition)
is recognised as our own; and a fact and the wake it implies are one write.

The engine runs in this process over the DynamoDB store, talking HTTP to an emulator
behind a fault-injecting endpoint that can apply a request and answer it with HTTP 500.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Iterator

import pytest

from persistence import DynamoStore
from persistence.provision import create_tables
from tests.faults import atomic_flows as flows
from tests.faults.faulty_aws import FaultyAWS
from workflows.client import resume_hook, send_signal
from workflows.core.background.sweeper import fire_due_timers, reconcile
from workflows.core.engine import Engine
from workflows.core.model.records import RunEnding, RunStatus
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.core.replay.commands import RunEnd
from workflows.memory import RecordingTransport


class Clock:
    def __init__(self) -> None:
        self.time = time.time()

    def now(self) -> float:
        return self.time

    def __call__(self) -> float:
        return self.time


@pytest.fixture(scope="module")
def faulty() -> Iterator[FaultyAWS]:
    aws = FaultyAWS(rate=0.0)
    yield aws
    aws.stop()


@pytest.fixture()
def engine(settings, faulty, monkeypatch) -> Engine:  # type: ignore[no-untyped-def]
    own = settings.with_(dynamodb_endpoint=faulty.url, table_prefix=f"lr{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    clock = Clock()
    store = DynamoStore(own, clock=clock)
    engine = Engine(store, RecordingTransport(), own, clock=clock)
    monkeypatch.setattr("workflows.client.get_engine", lambda settings=None: engine)
    return engine


def start(engine: Engine, workflow: str, *args: Any) -> str:
    run_id, _ = engine.create_run(get_workflow(workflow), json.dumps([list(args), {}]))
    run_worker_task(engine, lambda: engine.resume(run_id))
    return run_id


def resumed(engine: Engine) -> list[str]:
    transport = engine.transport
    assert isinstance(transport, RecordingTransport)
    return [m.run_id for m in transport.resumes]


def test_a_hook_resume_whose_response_is_lost_succeeds_and_wakes_the_run(engine, faulty) -> None:  # type: ignore[no-untyped-def]
    key = uuid.uuid4().hex
    run_id = start(engine, "await_hook", key)
    assert engine.store.get_run(run_id).status == RunStatus.SUSPENDED
    faulty.injector.lose_response("write", "-hooks")
    lost = faulty.injector.responses_lost
    engine.transport.clear()
    resume_hook(flows.PUBLISHED[key], {"ok": True})  # no HookAlreadyResumed: it was our own write
    assert faulty.injector.responses_lost == lost + 1
    assert run_id in resumed(engine)
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert engine.store.get_run(run_id).result == '{"ok":true}'


def test_a_child_end_whose_response_is_lost_still_wakes_its_parent(engine, faulty) -> None:  # type: ignore[no-untyped-def]
    parent = start(engine, "parent_of", 41)
    assert engine.store.get_run(parent).status == RunStatus.SUSPENDED
    child = f"{parent}.0"
    run = engine.store.get_run(child)
    engine.transport.clear()
    faulty.injector.lose_response("write", '"status"')  # the write that ends the child
    assert engine.end(run, RunEnd.completed("41"))
    assert engine.store.get_run(child).status == RunStatus.COMPLETED
    assert faulty.injector.responses_lost >= 1
    assert parent in resumed(engine)
    run_worker_task(engine, lambda: engine.resume(parent))
    assert engine.store.get_run(parent).result == "42"


def test_a_hook_expiry_whose_response_is_lost_still_wakes_the_run(engine, faulty) -> None:  # type: ignore[no-untyped-def]
    run_id = start(engine, "expiring_hook", uuid.uuid4().hex)
    engine.clock.time += 5  # type: ignore[attr-defined]
    faulty.injector.lose_response("UpdateItem", "-hooks")
    engine.transport.clear()
    assert fire_due_timers(engine) >= 1
    assert faulty.injector.responses_lost >= 1
    assert run_id in resumed(engine)
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert engine.store.get_run(run_id).result == '"timed out"'


def expire_leases(engine: Engine) -> None:
    engine.clock.time += engine.settings.lease_seconds * 3  # type: ignore[attr-defined]


def test_a_hook_resume_leaves_a_lease_that_covers_a_crash_before_the_resume_is_sent(engine) -> None:  # type: ignore[no-untyped-def]
    from workflows.core.ops.waits import hash_token

    key = uuid.uuid4().hex
    run_id = start(engine, "await_hook", key)
    engine.transport.clear()
    engine.store.complete_hook(hash_token(flows.PUBLISHED[key]), '"yes"')  # the fact; the process dies here
    expire_leases(engine)
    assert reconcile(engine) == 1
    assert run_id in resumed(engine)


def test_a_signal_leaves_a_lease_that_covers_a_crash_before_the_resume_is_sent(engine) -> None:  # type: ignore[no-untyped-def]
    run_id = start(engine, "await_signal")
    engine.transport.clear()
    assert engine.store.put_signal(run_id, "go", '"now"') is not None  # the fact; the process dies here
    expire_leases(engine)
    assert reconcile(engine) == 1
    assert run_id in resumed(engine)


def test_a_signal_to_an_ended_run_is_refused_and_not_stored(engine) -> None:  # type: ignore[no-untyped-def]
    from workflows.errors import RunEnded

    run_id = start(engine, "await_signal")
    engine.store.finish_run(run_id, RunEnding("cancelled", error="cancelled"))
    with pytest.raises(RunEnded):
        send_signal(run_id, "go", 1)
    assert engine.store.signals(run_id, "go") == []


def test_a_child_end_leaves_its_parent_leased(engine) -> None:  # type: ignore[no-untyped-def]
    parent = start(engine, "parent_of", 1)
    child = f"{parent}.0"
    engine.transport.clear()
    engine.store.finish_run(child, RunEnding("completed", result="1", wake=parent))  # the end; the process dies here
    expire_leases(engine)
    assert reconcile(engine) == 1
    assert parent in resumed(engine)


class CancelBeforeContinue:
    """A store whose run is cancelled by someone else just before continue-as-new writes."""

    def __init__(self, store: DynamoStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _cancel(self, run_id: str) -> None:
        self.store.finish_run(run_id, RunEnding("cancelled", error="cancelled"))

    def continue_run(self, run_id: str, successor: Any, timers: Any = ()) -> Any:
        self._cancel(run_id)
        return self.store.continue_run(run_id, successor, timers)


def test_continue_as_new_that_loses_a_race_with_cancel_leaves_no_successor(engine) -> None:  # type: ignore[no-untyped-def]
    from workflows.core.replay.commit import RUN_NAMESPACE

    racing = Engine(CancelBeforeContinue(engine.store), engine.transport, engine.settings, clock=engine.clock)  # type: ignore[arg-type]
    run_id, _ = racing.create_run(get_workflow("countdown"), "[[1],{}]")
    run_worker_task(racing, lambda: racing.resume(run_id))
    assert engine.store.get_run(run_id).status == RunStatus.CANCELLED
    successor = str(uuid.uuid5(RUN_NAMESPACE, f"{run_id}:continue"))
    assert engine.store.find_run(successor) is None
    assert successor not in resumed(engine)


def test_continue_as_new_ends_the_run_and_starts_its_successor(engine) -> None:  # type: ignore[no-untyped-def]
    run_id = start(engine, "countdown", 1)
    first = engine.store.get_run(run_id)
    assert first.status == RunStatus.CONTINUED and first.continued_to
    successor = engine.store.get_run(first.continued_to)
    assert successor.continued_from == run_id and successor.lease_expires_at is not None
    assert successor.run_id in resumed(engine)


def test_a_retry_timer_claim_whose_response_is_lost_still_sends_the_retry(engine, faulty) -> None:  # type: ignore[no-untyped-def]
    key = uuid.uuid4().hex
    run_id = start(engine, "retried_step", key)
    transport = engine.transport
    assert isinstance(transport, RecordingTransport)
    (first,) = transport.steps
    transport.clear()
    run_worker_task(engine, lambda: execute_step(engine, first, redelivered=False))  # fails: a retry timer
    assert not transport.steps
    engine.clock.time += 5  # type: ignore[attr-defined]
    faulty.injector.lose_response("write", "-timers")  # the claim of the retry timer
    assert fire_due_timers(engine) >= 1
    assert faulty.injector.responses_lost >= 1
    assert [(m.run_id, m.attempt) for m in transport.steps] == [(run_id, 2)]
    assert not [t for t in engine.store.due_timers(limit=1000) if t.run_id == run_id]  # fired, then deleted
