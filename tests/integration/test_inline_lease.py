"""A resume running a chain of inline steps longer than the lease keeps its lease, and stops
writing when the run ended or another resume took it over."""

from __future__ import annotations

import time
import uuid
from typing import Iterator

import pytest

from persistence import DynamoStore
from persistence.provision import create_tables
from tests.integration import robust_flows as flows
from workflows.core.background.sweeper import reconcile
from workflows.core.engine import Engine
from workflows.core.model.records import EventRecord, OpKind, RunEnding, event_seq
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import run_worker_task
from workflows.core.storage.timeline import run_history
from workflows.memory import ManualClock, RecordingTransport

STEPS = 10


@pytest.fixture(scope="module")
def own_settings(settings):  # type: ignore[no-untyped-def]
    own = settings.with_(table_prefix=f"il{uuid.uuid4().hex[:6]}-")
    create_tables(own)  # its own tables: the fake clock must not touch other tests' runs
    return own


@pytest.fixture()
def engine(own_settings) -> Iterator[Engine]:  # type: ignore[no-untyped-def]
    clock = ManualClock(time.time())
    store = DynamoStore(own_settings, clock=clock)
    flows.ticks.clear()
    yield Engine(store, RecordingTransport(), own_settings, clock=clock)
    flows.on_tick = lambda i: None


def start(engine: Engine) -> str:
    run_id, _ = engine.create_run(get_workflow(flows.inline_ticks.name), f"[[{STEPS}], {{}}]")
    return run_id


def outcome_positions(engine: Engine, run_id: str) -> list[int]:
    return [e.pos for e in run_history(engine.store, run_id) if e.is_outcome]


def test_inline_chain_longer_than_the_lease_is_not_recovered(engine: Engine) -> None:
    run_id = start(engine)

    def step_takes_half_a_lease(i: int) -> None:
        engine.clock.advance(engine.settings.lease_seconds / 2)  # type: ignore[attr-defined]
        reconcile(engine)  # beat runs meanwhile

    flows.on_tick = step_takes_half_a_lease
    run_worker_task(engine, lambda: engine.resume(run_id))
    run = engine.store.get_run(run_id)
    assert [m.run_id for m in engine.transport.resumes if m.recovering] == []  # type: ignore[attr-defined]
    assert run.recoveries == 0
    assert flows.ticks == {i: 1 for i in range(STEPS)}
    assert (run.status, run.result) == ("completed", str(STEPS))
    assert outcome_positions(engine, run_id) == list(range(STEPS))


def test_a_resume_stops_writing_once_the_run_ended(engine: Engine) -> None:
    run_id = start(engine)

    def ended_meanwhile(i: int) -> None:
        engine.clock.advance(engine.settings.lease_seconds / 2)  # type: ignore[attr-defined]
        if i == 4:  # the step stalled past the lease and the reconciler gave up on the run
            engine.clock.advance(engine.settings.lease_seconds)  # type: ignore[attr-defined]
            assert engine.store.finish_run(run_id, RunEnding("failed", error="ended elsewhere")) is not None

    flows.on_tick = ended_meanwhile
    run_worker_task(engine, lambda: engine.resume(run_id))
    run = engine.store.get_run(run_id)
    assert (run.status, run.error) == ("failed", "ended elsewhere")
    assert sorted(flows.ticks) == [0, 1, 2, 3, 4]
    assert outcome_positions(engine, run_id) == [0, 1, 2, 3, 4]  # nothing written after the next boundary


def test_a_resume_that_loses_an_inline_outcome_stops(engine: Engine) -> None:
    run_id = start(engine)

    def recorded_by_another_resume(i: int) -> None:
        if i == 3:
            engine.store.record_event(EventRecord(run_id=run_id, seq=event_seq(3), kind=OpKind.STEP.value,
                                                  status="completed", at=engine.now(), name=flows.tick.name,
                                                  data="3"))

    flows.on_tick = recorded_by_another_resume
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert sorted(flows.ticks) == [0, 1, 2, 3]  # the other resume goes on from there
    assert outcome_positions(engine, run_id) == [0, 1, 2, 3]
    assert engine.store.get_run(run_id).status == "running"  # still held by the claim this resume took
    engine.store.finish_run(run_id, RunEnding("cancelled"))  # leave no leased run behind
