"""The engine tells its observer what it does, at the points it passes anyway; an observer
that fails never fails a run."""

from __future__ import annotations

import contextlib
import json
from typing import Any, ContextManager, Iterator

from tests.replay import replay_flows as flows  # noqa: F401 - registers the workflows
from tests.replay.ports import memory_engine, recording
from tests.replay.test_replay import drain
from workflows.core.model.records import RunRecord, RunStatus, TimerRecord
from workflows.core.model.registry import get_workflow
from workflows.core.replay.observer import NullObserver, Observers, StepAttempt


class Recorder(NullObserver):
    """Writes down every event, with ``>``/``<`` for the start and end of a block."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    @contextlib.contextmanager
    def _block(self, *event: Any) -> Iterator[None]:
        self.events.append((">", *event))
        yield
        self.events.append(("<", event[0]))

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        return self._block("resume", recovering)

    def replaying(self, run: RunRecord) -> None:
        self.events.append(("replaying", run.workflow))

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        return self._block("attempt", op.workflow, op.step, op.pos, op.attempt)

    def attempt_ended(self, op: StepAttempt, status: str, error: str | None) -> None:
        self.events.append(("ended", op.step, status))

    def waiting(self, run: RunRecord, pos: int, waiting: dict[str, Any]) -> None:
        self.events.append(("waiting", pos, waiting["kind"]))

    def timer(self, timer: TimerRecord, lag: float) -> ContextManager[None]:
        return self._block("timer", timer.kind, lag >= 0)

    def run_ended(self, run: RunRecord) -> None:
        self.events.append(("run_ended", run.workflow, run.status))


class Broken(NullObserver):
    def replaying(self, run: RunRecord) -> None:
        raise RuntimeError("observer bug")

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        raise RuntimeError("observer bug")


def test_a_retried_step_and_a_run_end_are_observed_in_order() -> None:
    engine = memory_engine()
    recorder = Recorder()
    engine.observer = Observers([Broken(), recorder])
    engine.create_run(get_workflow("replay_one_flaky"), json.dumps([[1], {}]))
    drain(engine)
    engine.clock.advance(6)  # type: ignore[attr-defined]  # the retry's backoff
    drain(engine)
    run = engine.store.list_runs(workflow="replay_one_flaky").items[0]
    assert run.status == RunStatus.COMPLETED
    flow = "replay_one_flaky"
    assert recorder.events == [
        (">", "resume", False), ("replaying", flow), ("<", "resume"),            # dispatches op 0
        (">", "attempt", flow, "replay_flaky", 0, 1), ("ended", "replay_flaky", "retry"), ("<", "attempt"),
        (">", "timer", "retry", True),                                           # beat sends attempt 2
        ("<", "timer"),
        (">", "attempt", flow, "replay_flaky", 0, 2), ("ended", "replay_flaky", "completed"), ("<", "attempt"),
        (">", "resume", False), ("replaying", flow), ("run_ended", flow, "completed"), ("<", "resume"),
    ]


def test_a_sleep_is_a_wait_then_a_timer() -> None:
    engine = memory_engine()
    recorder = Recorder()
    engine.observer = recorder
    engine.create_run(get_workflow("replay_every_op"), json.dumps([["observer-key"], {}]))
    drain(engine)
    assert ("waiting", 2, "sleep") in recorder.events
    before = len(recorder.events)
    engine.clock.advance(31)  # type: ignore[attr-defined]
    drain(engine)
    assert recorder.events[before] == (">", "timer", "sleep", True)


class Joins(NullObserver):
    def __init__(self) -> None:
        self.joins: list[tuple[str, int, int, float]] = []

    def joined(self, run: RunRecord, pos: int, branches: int, seconds: float) -> None:
        self.joins.append((run.workflow, pos, branches, seconds))


def test_a_completed_join_is_observed_once_with_its_latency() -> None:
    engine = memory_engine()
    joins = Joins()
    engine.observer = Observers([joins])
    engine.create_run(get_workflow("replay_fan"), json.dumps([[3], {}]))
    sent = recording(engine)
    resumes = list(sent.resumes)
    sent.clear()
    for resume in resumes:  # dispatches the three branches at t=0
        engine.resume(resume.run_id)
    assert len(sent.steps) == 3
    engine.clock.advance(7)  # type: ignore[attr-defined]  # the branches run 7 s later
    drain(engine)
    run = engine.store.list_runs(workflow="replay_fan").items[0]
    assert run.status == RunStatus.COMPLETED
    assert joins.joins == [("replay_fan", 0, 3, 7.0)]
