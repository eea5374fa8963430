"""A worker task runs a run's next steps itself when they go to a queue it consumes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from persistence import DynamoStore
from persistence.provision import create_tables
from tests.e2e import flows
from workflows.core.engine import Engine
from workflows.core.model.records import RunRecord
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import run_worker_task
from workflows.core.replay.observer import NullObserver
from workflows.core.storage.timeline import run_history
from workflows.memory import RecordingTransport


def sent(transport: RecordingTransport) -> list[tuple[str, int, bool]]:
    return [(m.step, m.pos, m.resent) for m in transport.steps]


@pytest.fixture(scope="module")
def own_settings(settings):  # type: ignore[no-untyped-def]
    own = settings.with_(table_prefix=f"ip{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    return own


def started(own_settings, transport: RecordingTransport, workflow: str, *args: Any,  # type: ignore[no-untyped-def]
            in_place_seconds: float = 10.0) -> tuple[Engine, str]:
    store = DynamoStore(own_settings.with_(in_place_seconds=in_place_seconds))
    engine = Engine(store, transport, store.settings)
    run_id, _ = engine.create_run(get_workflow(workflow), f"[{list(args)}, {{}}]")
    assert [m.run_id for m in transport.resumes] == [run_id]
    return engine, run_id


def test_steps_of_a_consumed_queue_run_in_the_resume_task(own_settings) -> None:  # type: ignore[no-untyped-def]
    transport = RecordingTransport({None})
    engine, run_id = started(own_settings, transport, flows.sequence.name, 4)
    run_worker_task(engine, lambda: engine.resume(run_id))
    run = engine.store.get_run(run_id)
    assert (run.status, run.result) == ("completed", "6")
    assert sent(transport) == []  # no step message at all
    outcomes = [e for e in run_history(engine.store, run_id) if e.is_outcome]
    assert [e.pos for e in outcomes] == [0, 1, 2, 3]


def test_steps_of_another_queue_are_sent(own_settings) -> None:  # type: ignore[no-untyped-def]
    transport = RecordingTransport({"payments"})
    engine, run_id = started(own_settings, transport, flows.sequence.name, 4)
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert sent(transport) == [("add", 0, False)]
    assert engine.store.get_run(run_id).status == "running"


def test_no_time_budget_sends_every_step(own_settings) -> None:  # type: ignore[no-untyped-def]
    transport = RecordingTransport({None})
    engine, run_id = started(own_settings, transport, flows.sequence.name, 4, in_place_seconds=0)
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert sent(transport) == [("add", 0, False)]


def test_fan_out_branches_are_sent(own_settings) -> None:  # type: ignore[no-untyped-def]
    transport = RecordingTransport({None})
    engine, run_id = started(own_settings, transport, flows.fan_out.name, 3)
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert sorted(sent(transport)) == [("add", 0, False)] * 3


def test_outside_a_worker_task_steps_are_sent(own_settings) -> None:  # type: ignore[no-untyped-def]
    transport = RecordingTransport({None})
    engine, run_id = started(own_settings, transport, flows.sequence.name, 4)
    engine.resume(run_id)
    assert sent(transport) == [("add", 0, False)]


class StoppingTransport(RecordingTransport):
    """A worker asked to stop (warm shutdown) after ``runs`` steps ran in place."""

    def __init__(self, runs: int) -> None:
        super().__init__({None})
        self.left = runs

    def runs_here(self, step: str, queue: str | None) -> bool:
        self.left -= 1
        return self.left >= 0 and super().runs_here(step, queue)


def test_once_the_worker_stops_the_next_step_is_sent(own_settings) -> None:  # type: ignore[no-untyped-def]
    transport = StoppingTransport(runs=2)
    engine, run_id = started(own_settings, transport, flows.sequence.name, 4)
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert sent(transport) == [("add", 2, False)]
    assert [e.pos for e in run_history(engine.store, run_id)] == [0, 1]
    assert engine.store.get_run(run_id).cursor == 2


class Replays(NullObserver):
    """Counts the replays of the workflow function."""

    def __init__(self) -> None:
        self.count = 0

    def replaying(self, run: RunRecord) -> None:
        self.count += 1


def test_steps_in_place_continue_the_function_without_replaying_it(own_settings) -> None:  # type: ignore[no-untyped-def]
    """A run of 6 steps in place runs its workflow function once, from one resume."""
    transport = RecordingTransport({None})
    engine, run_id = started(own_settings, transport, flows.sequence.name, 6)
    engine.observer = replays = Replays()
    run_worker_task(engine, lambda: engine.resume(run_id))
    assert engine.store.get_run(run_id).result == "15"
    assert replays.count == 1
