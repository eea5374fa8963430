"""Failed attempts are recorded the same way for every kind of step (fan-out branches
included), and an attempt whose failure is recorded never runs again."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.replay import replay_flows as flows
from tests.replay.ports import SETTINGS, memory_engine, recording
from workflows.core.background.sweeper import fire_due_timers, reconcile
from workflows.core.engine import Engine
from workflows.core.execution.attempts import Attempt, StepAddress, record_failed_attempt, schedule_retry
from workflows.core.model.records import Branch, EventRecord, RunStatus, StepMessage, attempt_seq
from workflows.core.model.registry import get_step, get_workflow
from workflows.core.ops.fanout import join_id
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.memory import ManualClock, MemoryStore, RecordingTransport


@pytest.fixture()
def engine() -> Engine:
    return memory_engine()


def sent(engine: Engine) -> RecordingTransport:
    return recording(engine)


def start(engine: Engine, workflow: str, arg: int) -> str:
    run_id, _ = engine.create_run(get_workflow(workflow), json.dumps([[arg], {}]))
    sent(engine).clear()
    run_worker_task(engine, lambda: engine.resume(run_id))
    return run_id


def deliver_steps(engine: Engine, *, redelivered: bool = False) -> list[StepMessage]:
    messages = list(sent(engine).steps)
    sent(engine).steps.clear()
    for message in messages:
        run_worker_task(engine, lambda m=message: execute_step(engine, m, redelivered=redelivered or m.resent))
    return messages


def ran(label: str) -> int:
    return flows.RAN.get(label, 0)


def test_a_failed_branch_attempt_is_recorded_and_never_runs_again(engine: Engine) -> None:
    run_id = start(engine, flows.replay_fan_flaky.name, 2)
    first = deliver_steps(engine)
    assert [(m.branch.index if m.branch else None, m.attempt) for m in first] == [(0, 1), (1, 1)]
    join = join_id(run_id, 0)
    records = engine.store.read_history(join)
    assert [(e.seq, e.kind, e.attempt, e.error) for e in records] == [
        (attempt_seq(index, 1), "attempt", 1, "RuntimeError: the first attempt fails") for index in (0, 1)]
    assert engine.store.read_history(run_id) == []  # the run's own history holds no branch attempt
    before = ran("flaky0#1")
    run_worker_task(engine, lambda: execute_step(engine, first[0], redelivered=True))  # a duplicate delivery
    assert ran("flaky0#1") == before and sent(engine).steps == []
    engine.clock.advance(6)  # type: ignore[attr-defined]
    fire_due_timers(engine)
    assert [m.attempt for m in deliver_steps(engine)] == [2, 2]
    run = engine.store.get_run(run_id)
    assert (run.status, json.loads(run.result or "null")) == (RunStatus.COMPLETED, [0, 2])


def test_a_late_copy_waiting_for_a_slot_keeps_the_next_attempts_retry(engine: Engine) -> None:
    """A duplicate of attempt 1 finds the slot taken after its twin failed and stored the retry of
    attempt 2: its wait for the slot must not replace that retry, whose message would be lost
    and the run left to recovery (simulator seeds 2511, 2947, 3707)."""
    run_id = start(engine, flows.replay_one_limited_flaky.name, 4)
    (message,) = sent(engine).steps
    deliver_steps(engine)  # attempt 1 fails: the retry of attempt 2 is stored
    store, limit = engine.store, f"step:{message.step}"
    taken = store.acquire_slot(limit, 1, "another attempt", engine.now() + SETTINGS.lease_seconds)
    assert taken is not None
    run_worker_task(engine, lambda: execute_step(engine, message, redelivered=False))  # the duplicate waits
    assert ran("limited_flaky4#1") == 1
    store.release_slot(limit, taken, "another attempt")
    engine.clock.advance(SETTINGS.sweep_interval * 2 + 5)  # type: ignore[attr-defined]
    fire_due_timers(engine)
    assert sorted(m.attempt for m in deliver_steps(engine)) == [1, 2]  # attempt 1 finds its failure recorded
    assert (ran("limited_flaky4#1"), ran("limited_flaky4#2")) == (1, 1)
    assert store.get_run(run_id).result == "8"


def test_a_late_copy_failing_keeps_the_later_attempts_retry(engine: Engine) -> None:
    """A late copy of attempt 1 fails after attempt 2 failed: its retry (of attempt 2, which
    ran) must not replace the retry of attempt 3."""
    run_id = start(engine, flows.replay_one_flaky.name, 5)
    (message,) = sent(engine).steps
    sent(engine).steps.clear()
    step = get_step(message.step)
    second = dataclasses.replace(message, attempt=2)
    schedule_retry(engine, second, step, Attempt("retry", error="attempt 2", retry_in=5.0, attempt=2))
    schedule_retry(engine, message, step, Attempt("retry", error="late attempt 1", retry_in=5.0, attempt=1))
    engine.clock.advance(10)  # type: ignore[attr-defined]
    fire_due_timers(engine)
    assert sorted(m.attempt for m in deliver_steps(engine)) == [2, 3]  # attempt 2 finds its failure recorded
    assert (ran("flaky5#2"), ran("flaky5#3")) == (0, 1)
    assert engine.store.get_run(run_id).result == "10"


def test_a_recovered_fan_out_resends_a_branch_from_its_last_recorded_attempt(engine: Engine) -> None:
    run_id = start(engine, flows.replay_fan_flaky.name, 1)
    deliver_steps(engine)  # attempt 1 fails: its retry timer and its record are stored
    assert engine.store.claim_timer(f"{run_id}#0#retry#0#2")  # the retry timer is lost with its beat
    engine.clock.advance(SETTINGS.lease_seconds * 3)  # type: ignore[attr-defined]
    assert reconcile(engine) == 1
    resume = sent(engine).resumes.pop()
    run_worker_task(engine, lambda: engine.resume(resume.run_id, recovering=resume.recovering))
    assert [(m.attempt, m.resent) for m in deliver_steps(engine)] == [(2, True)]
    run = engine.store.get_run(run_id)
    assert (run.status, json.loads(run.result or "null")) == (RunStatus.COMPLETED, [0])


def test_a_redelivered_attempt_past_the_last_slot_runs_unless_its_failure_is_recorded(engine: Engine) -> None:
    run_id = start(engine, flows.replay_one_flaky.name, 3)
    (message,) = sent(engine).steps
    sent(engine).steps.clear()
    store = engine.store
    assert store.record_attempt(EventRecord(run_id=run_id, seq=attempt_seq(0, 1000), kind="attempt",
                                            status="failed", at=1.0, name=message.step, attempt=1000))
    late = dataclasses.replace(message, attempt=1000, resent=True)
    run_worker_task(engine, lambda: execute_step(engine, late, redelivered=True))
    assert ran("flaky3#1000") == 0  # attempt 1000 failed already (recorded in the shared last slot)
    run_worker_task(engine, lambda: execute_step(engine, dataclasses.replace(late, attempt=1001), redelivered=True))
    assert ran("flaky3#1001") == 1
    assert store.get_run(run_id).result == "6"


@pytest.mark.parametrize("branch", [False, True])
def test_an_attempt_failing_after_its_run_ended_records_nothing(engine: Engine, branch: bool) -> None:
    """A step's retry is scheduled, then a cancel ends the run before the attempt's record is
    written (the record comes after the timer): the record is refused, nothing lands after the end."""
    run_id = start(engine, flows.replay_one_flaky.name, 1)
    engine.cancel_now(engine.store.get_run(run_id))
    assert engine.store.get_run(run_id).status == RunStatus.CANCELLED
    history = engine.store.read_history(run_id)
    slot = StepAddress(run_id, 0, Branch(join_id(run_id, 0), 0, 1) if branch else None)
    outcome = Attempt(status="failed", error="RuntimeError: the first attempt fails", attempt=1, retry_in=5.0)
    assert record_failed_attempt(engine.store, slot, "replay_flaky", outcome, engine.now()) is None
    assert engine.store.read_history(run_id) == history
    assert engine.store.read_history(join_id(run_id, 0)) == []


def test_a_stale_resume_that_loses_an_inline_attempt_record_suspends_the_run_it_claimed(engine: Engine) -> None:
    """Resume A runs attempt 1 of an inline step, records its failure and suspends the run until
    the retry; resume B, which read the history before that record, then claims the run and runs
    attempt 1 again. B's record loses: B must suspend the run until its retry, not stop holding
    the claim's lease (the run then waited for recovery; simulator seed 1619 before this fix)."""
    run_id, _ = engine.create_run(get_workflow(flows.replay_one_inline_flaky.name), json.dumps([[7], {}]))
    sent(engine).clear()
    as_read_by_b = engine.store.get_run(run_id)  # B read the run and its history before A ran
    engine.resume(run_id)  # resume A
    assert engine.store.get_run(run_id).status == RunStatus.SUSPENDED

    def b_reads_stale_history(request: str, apply):  # type: ignore[no-untyped-def]
        result = apply()
        if request != "read history":
            return result
        items, start = result  # as B read it, before A's record of attempt 1 (seq 1)
        return [item for item in items if item.get("seq") != 1], start

    engine.cache.forget(run_id)
    engine.store.interceptor = b_reads_stale_history  # type: ignore[attr-defined]
    engine.resume(run_id, run=as_read_by_b)  # resume B
    engine.store.interceptor = None  # type: ignore[attr-defined]
    run = engine.store.get_run(run_id)
    assert run.status == RunStatus.SUSPENDED and run.lease_expires_at is None
    assert (run.waiting or {}).get("due", 0) > engine.now()
    assert flows.RAN.get("inline_flaky7#1") == 2 and not flows.RAN.get("inline_flaky7#2")
    engine.clock.advance(6)  # type: ignore[attr-defined]  # the retry is due: its timer wakes the run
    for _ in range(3):
        fire_due_timers(engine)
        for resume in list(sent(engine).resumes):
            sent(engine).clear()
            engine.resume(resume.run_id)
    assert engine.store.get_run(run_id).status == RunStatus.COMPLETED
    assert engine.store.get_run(run_id).result == "14"


def test_a_step_in_place_that_will_be_retried_leaves_no_claim_behind() -> None:
    """A step in place runs under its resume's claim of the run; when its attempt will be retried,
    the claim is released (the op marked in flight) before the retry timer is stored, so the
    retry's worker ends the run at once instead of waiting for the claim's lease to pass."""
    clock = ManualClock()
    engine = Engine(MemoryStore(SETTINGS, clock), RecordingTransport({None}), SETTINGS, clock=clock)
    run_id = start(engine, flows.replay_one_flaky.name, 4)
    assert not sent(engine).steps and ran("flaky4#1") == 1  # the first attempt ran in place, and failed
    run = engine.store.get_run(run_id)
    assert run.cursor == 0 and run.status == RunStatus.RUNNING
    clock.advance(5.0)  # the backoff, well within the lease the retry stored (60 s)
    assert fire_due_timers(engine) == 1
    deliver_steps(engine, redelivered=True)
    assert ran("flaky4#2") == 1
    assert engine.store.get_run(run_id).status == RunStatus.COMPLETED
