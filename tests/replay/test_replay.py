"""The replay engine on the in-memory ports: no server, no worker. Every op kind runs to
completion; a second resume replays the recorded history without running a step again;
a replay that meets another op than the recorded one fails with NonDeterminismError."""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable

import pytest

from tests.replay import replay_flows as flows
from tests.replay.ports import SETTINGS, memory_engine, recording
from workflows.client import complete_hook, signal_run
from workflows.core.background.sweeper import fire_due_timers
from workflows.core.engine import Engine
from workflows.core.model.records import OpKind, RunStatus, StepMessage
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.core.storage.timeline import run_history
from workflows.memory import ManualClock, MemoryStore, RecordingTransport


@pytest.fixture()
def engine() -> Engine:
    return memory_engine()


def transport(engine: Engine) -> RecordingTransport:
    return recording(engine)


def drain(engine: Engine, rounds: int = 50) -> None:
    """Deliver every queued message (steps and resumes) and fire due timers, until quiet."""
    sent = transport(engine)
    for _ in range(rounds):
        if not sent.steps and not sent.resumes:
            if not fire_due_timers(engine):
                return
            continue
        steps, resumes = list(sent.steps), list(sent.resumes)
        sent.clear()
        for message in steps:
            run_worker_task(engine, lambda m=message: execute_step(engine, m, redelivered=False))
        for resume in resumes:
            run_worker_task(engine, lambda r=resume: engine.resume(r.run_id, recovering=r.recovering))
    raise AssertionError("the run did not settle")


def drain_while(engine: Engine, meanwhile: Callable[[int], None]) -> None:
    """Drain, calling ``meanwhile(i)`` inside each ``replay_long_step(i)``."""
    flows.MEANWHILE[:] = [meanwhile]
    try:
        drain(engine)
    finally:
        flows.MEANWHILE.clear()


def start(engine: Engine, workflow: str, *args: Any) -> str:
    run_id, _ = engine.create_run(get_workflow(workflow), json.dumps([list(args), {}]))
    drain(engine)
    return run_id


def test_every_op_kind_runs_to_completion(engine: Engine) -> None:
    key = uuid.uuid4().hex
    run_id = start(engine, "replay_every_op", key)
    assert engine.store.get_run(run_id).status == RunStatus.SUSPENDED  # sleeping
    engine.clock.advance(31)  # type: ignore[attr-defined]
    drain(engine)
    complete_hook(engine, flows.TOKENS[key], "yes")
    drain(engine)
    engine.clock.advance(61)  # type: ignore[attr-defined]  # the signal wait times out
    drain(engine)
    run = engine.store.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert json.loads(run.result or "null") == {"a": 2, "b": 3, "decision": "yes", "signal": "timed out",
                                                "fan": [20, 40], "child": 4}
    kinds = [e.kind for e in run_history(engine.store, run_id) if e.is_outcome]
    assert set(kinds) >= {k.value for k in (OpKind.STEP, OpKind.SLEEP, OpKind.HOOK, OpKind.HOOK_WAIT, OpKind.SIGNAL,
                                            OpKind.PARALLEL, OpKind.CHILD, OpKind.CHILD_RESULT)}


def test_a_signal_sent_before_the_wait_is_delivered(engine: Engine) -> None:
    key = uuid.uuid4().hex
    run_id = start(engine, "replay_every_op", key)
    signal_run(engine, run_id, "go", {"n": 1})
    engine.clock.advance(31)  # type: ignore[attr-defined]
    drain(engine)
    complete_hook(engine, flows.TOKENS[key], "ok")
    drain(engine)
    run = engine.store.get_run(run_id)
    assert run.status == RunStatus.COMPLETED and json.loads(run.result or "{}")["signal"] == {"n": 1}


def test_replaying_a_recorded_history_runs_no_step_again(engine: Engine) -> None:
    run_id = start(engine, "replay_chain", 0)
    assert engine.store.get_run(run_id).result == "1"
    before = dict(flows.RAN)
    history = run_history(engine.store, run_id)
    engine.cache.forget(run_id)
    ctx_run = engine.store.get_run(run_id)
    assert ctx_run.is_terminal
    # A fresh process replays the whole history (a copy of the run, live again) without a step.
    clock = ManualClock()
    fresh = Engine(MemoryStore(SETTINGS, clock), RecordingTransport(), SETTINGS, clock=clock)
    copy_id, _ = fresh.create_run(get_workflow("replay_chain"), ctx_run.args)
    for event in history:
        fresh.store.record_event(type(event)(**{**event.__dict__, "run_id": copy_id}))
    run_worker_task(fresh, lambda: fresh.resume(copy_id))
    assert fresh.store.get_run(copy_id).result == "1"
    assert flows.RAN == before


def test_continue_as_new_chains_runs(engine: Engine) -> None:
    run_id = start(engine, "replay_chain", 2)
    first = engine.store.get_run(run_id)
    assert first.status == RunStatus.CONTINUED
    chain = [first]
    while chain[-1].continued_to:
        chain.append(engine.store.get_run(chain[-1].continued_to))
    assert [r.status for r in chain] == ["continued", "continued", "completed"]
    assert chain[-1].result == "1"


def test_a_different_op_at_a_recorded_position_is_non_determinism(engine: Engine) -> None:
    run_id, _ = engine.create_run(get_workflow("replay_changed"), "[[true],{}]")
    run_worker_task(engine, lambda: engine.resume(run_id))  # dispatches double at op 0
    message = transport(engine).steps[0]
    assert isinstance(message, StepMessage)
    # The code changed while the step ran: the run now calls inc at op 0.
    engine.store.runs.items[(run_id,)]["args"] = "[[false],{}]"  # type: ignore[attr-defined]
    engine.cache.forget(run_id)
    run_worker_task(engine, lambda: execute_step(engine, message, redelivered=False))
    run = engine.store.get_run(run_id)
    assert run.status == RunStatus.FAILED
    error = run.error or ""
    assert "position 0" in error and "replay_double" in error and "replay_inc" in error


@pytest.mark.parametrize("end", ["cancel", "deadline"])
def test_a_run_is_ended_by_its_inline_executor_never_under_it(engine: Engine, end: str) -> None:
    """A cancel (or deadline) during a chain of inline steps, seen by another resume of the
    run (a duplicate message, a sweep), must not end the run while its executor goes on:
    the executor ends it at its next lease renewal, and nothing is recorded after the end."""
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    workflow = "replay_inline_chain" if end == "cancel" else "replay_inline_chain_deadline"
    run_id, _ = engine.create_run(get_workflow(workflow), json.dumps([[8], {}]))
    ended_at: list[int] = []

    def meanwhile(i: int) -> None:
        clock.advance(SETTINGS.lease_seconds / 6)  # each step takes a while: the chain outlives a lease
        if i == 2:
            if end == "cancel":
                engine.request_cancel(run_id)  # (the deadline, 25 s after the start, has passed by now)
            engine.resume(run_id)  # another worker's resume of the same run, meanwhile
            if engine.store.get_run(run_id).is_terminal:
                ended_at.append(i)

    drain_while(engine, meanwhile)
    run = engine.store.get_run(run_id)
    assert run.status == ("cancelled" if end == "cancel" else "timed_out") and not ended_at
    history = run_history(engine.store, run_id)
    assert all(e.at <= run.ended_at for e in history), [(e.seq, e.at, run.ended_at) for e in history]
    assert len([e for e in history if e.kind == OpKind.STEP]) < 8  # it stopped before the chain's end


def test_a_fan_out_completed_after_a_cancel_ended_its_run_records_nothing(engine: Engine) -> None:
    """The branches of a cancelled run may still finish; the fan-out's outcome is then not
    written (nothing is recorded after a run's end)."""
    run_id, _ = engine.create_run(get_workflow("replay_fan"), json.dumps([[3], {}]))
    sent = transport(engine)
    (first,) = sent.resumes
    sent.clear()
    engine.resume(first.run_id)  # dispatches the 3 branches
    branches = list(sent.steps)
    assert len(branches) == 3
    sent.clear()
    live = engine.store.get_run(run_id)  # what the branches' tasks read before the cancel
    engine.request_cancel(run_id)
    engine.resume(run_id)  # e.g. a duplicate message: it sees the cancel and ends the run
    ended = engine.store.get_run(run_id)
    assert ended.status == "cancelled"
    before = len(run_history(engine.store, run_id))
    for message in branches:
        run_worker_task(engine, lambda m=message: execute_step(engine, m, redelivered=False, run=live))
    assert len(run_history(engine.store, run_id)) == before
    assert engine.store.get_run(run_id).status == "cancelled"


def test_a_sent_step_finishing_after_a_cancel_ended_its_run_records_nothing(engine: Engine) -> None:
    """A cancel ends a run whose step message is being worked on; the step's outcome, written
    when it finishes, must not land after the end: the end took the step's outcome slot."""
    run_id, _ = engine.create_run(get_workflow("replay_changed"), json.dumps([[True], {}]))
    sent = transport(engine)
    (first,) = sent.resumes
    sent.clear()
    engine.resume(first.run_id)  # sends replay_double(1)
    (message,) = sent.steps
    sent.clear()
    live = engine.store.get_run(run_id)  # what the step's task read before the cancel
    engine.request_cancel(run_id)
    engine.resume(run_id)
    ended = engine.store.get_run(run_id)
    assert ended.status == "cancelled"
    history = run_history(engine.store, run_id)
    assert [(e.pos, e.kind, e.status) for e in history] == [(0, OpKind.END, "cancelled")]
    run_worker_task(engine, lambda: execute_step(engine, message, redelivered=False, run=live))
    assert run_history(engine.store, run_id) == history
    assert engine.store.get_run(run_id).status == "cancelled"


def test_a_stalled_executor_records_nothing_after_a_cancel_ended_its_run(engine: Engine) -> None:
    """An executor stalls in an inline step past its lease; a cancel then ends the run (no
    live claim holds it). When the executor goes on, its step's outcome is not recorded."""
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    run_id, _ = engine.create_run(get_workflow("replay_inline_chain"), json.dumps([[5], {}]))

    def meanwhile(i: int) -> None:
        if i == 2:
            clock.advance(SETTINGS.lease_seconds * 2)  # a stall: the claim's lease expires
            engine.request_cancel(run_id)
            engine.resume(run_id)  # the cancel's resume ends the run
            assert engine.store.get_run(run_id).status == "cancelled"

    drain_while(engine, meanwhile)
    run = engine.store.get_run(run_id)
    history = run_history(engine.store, run_id)
    assert run.status == "cancelled"
    assert [(e.pos, e.kind) for e in history] == [(0, OpKind.STEP), (1, OpKind.STEP), (2, OpKind.END)]
    assert all(e.at <= run.ended_at for e in history)


@pytest.mark.parametrize("inline", [False, True])
def test_a_step_raising_a_huge_error_fails_as_a_step(engine: Engine, inline: bool) -> None:
    """An exception with a 500 KB message is recorded cut (attempts and outcome), so the
    step fails and retries as usual instead of its records failing the run's writes."""
    run_id = start(engine, "replay_huge_errors", inline)
    for _ in range(5):
        engine.clock.advance(1.0)  # type: ignore[attr-defined]
        drain(engine)
    run = engine.store.get_run(run_id)
    assert run.status == "completed" and 4000 < int(run.result or 0) < 4200 and run.recoveries == 0
    errors = [e.error for e in run_history(engine.store, run_id) if e.error]
    assert len(errors) == 2 and all(len(e) < 4100 for e in errors)  # the failed attempt and the outcome
