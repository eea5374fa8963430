"""Delayed starts (issue 27, item 5) in the testing kit: a run stored at once as ``delayed``, started by
its timer when due (the virtual clock skips to it), cancellable before it starts."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from tests.testing import delay_flows as flows
from workflows import InvalidStartTime, RunCancelled, RunStatus, list_runs
from workflows.core.model.records import TimerKind
from workflows.errors import InvalidDuration
from workflows.testing import WorkflowEnv


@pytest.fixture
def env() -> WorkflowEnv:
    with WorkflowEnv() as kit:
        yield kit


def timers_of(env: WorkflowEnv, run_id: str) -> list[tuple[str, float]]:
    return sorted((t["kind"], t["due_at"]) for t in env.store.timers.items.values() if t["run_id"] == run_id)


def test_a_delayed_run_is_listed_as_delayed_then_starts_at_its_time(env: WorkflowEnv) -> None:
    begin = env.clock.now()
    run = flows.report.options(delay="10m").start("late")
    record = run.record()
    assert (record.status, record.start_at, record.lease_expires_at) == ("delayed", begin + 600, None)
    assert timers_of(env, run.run_id) == [(TimerKind.START.value, begin + 600)]
    assert [r.run_id for r in list_runs(status="delayed")] == [run.run_id]
    assert [r.run_id for r in list_runs()] == [run.run_id]  # the merge of every status shows it
    assert env.transport.queue == []  # nothing is sent: the timer starts it
    env.advance("9m")
    assert run.status() == RunStatus.DELAYED and not env.steps(run)
    assert env.run_until_complete(run) == {"label": "late", "began": begin + 600}  # the kit skipped to its start time
    assert timers_of(env, run.run_id) == []


def test_start_at_takes_an_aware_datetime_and_a_past_time_starts_at_once(env: WorkflowEnv) -> None:
    at = env.now + timedelta(hours=2)
    run = env.apply_async(flows.report, ["eta"], start_at=at)
    assert run.record().start_at == at.timestamp()
    assert run.result()["began"] == at.timestamp()
    now = env.apply_async(flows.report, ["now"], start_at=env.now - timedelta(seconds=1))
    assert now.record().status == "pending" and now.record().start_at is None


def test_a_delayed_run_cancelled_before_its_time_ends_without_running_a_step(env: WorkflowEnv) -> None:
    run = flows.report.options(delay="1h").start("never")
    run.cancel()
    env.run_until_idle()
    assert run.status() == RunStatus.CANCELLED
    assert env.steps(run) == [] and timers_of(env, run.run_id) == []
    with pytest.raises(RunCancelled):
        env.run_until_complete(run)


def test_a_signal_sent_before_the_start_waits_for_the_run(env: WorkflowEnv) -> None:
    begin = env.clock.now()
    run = flows.greeter.options(delay="30m").start()
    env.signal(run, "name", "early")
    env.driver.settle()  # the signal's wake resumes it: it parks again until its time
    record = run.record()
    assert (record.status, record.lease_expires_at, record.cursor) == ("delayed", None, -1)
    assert timers_of(env, run.run_id) == [(TimerKind.START.value, begin + 1800)]
    assert env.run_until_complete(run) == "early"


def test_the_idempotency_key_of_a_delayed_start_names_one_run(env: WorkflowEnv) -> None:
    first = flows.report.options(delay="1h", idempotency_key="k").start("a")
    again = flows.report.options(delay="5m", idempotency_key="k").start("b")
    assert again == first and len(list_runs(status="delayed")) == 1
    assert env.run_until_complete(first)["label"] == "a"


def test_max_duration_counts_from_the_start_time(env: WorkflowEnv) -> None:
    begin = env.clock.now()
    run = flows.long_child.options(delay="3d").start(1)
    assert run.record().deadline == begin + 3 * 86_400 + 2 * 86_400
    assert env.run_until_complete(run) == "done"


def test_a_delayed_debounced_start_starts_with_the_last_arguments_after_both(env: WorkflowEnv) -> None:
    begin = env.clock.now()
    first = flows.report.options(delay="1h", debounce="5m", debounce_key="d").start("a")
    second = flows.report.options(debounce="5m", debounce_key="d").start("b")
    assert second == first
    assert env.run_until_complete(first) == {"label": "b", "began": begin + 3600}


def test_a_child_can_start_later(env: WorkflowEnv) -> None:
    run = env.start(flows.parent_of_delayed)
    env.driver.settle()
    child = run.children()[0]
    assert child.status() == RunStatus.DELAYED and child.parent() == run
    assert run.result() == "child"


@pytest.mark.parametrize("options, error", [
    ({"delay": "10m", "start_at": datetime(2030, 1, 1, tzinfo=timezone.utc)}, InvalidStartTime),
    ({"start_at": datetime(2030, 1, 1)}, InvalidStartTime),
    ({"start_at": "2030-01-01"}, InvalidStartTime),
    ({"delay": "soon"}, InvalidDuration),
    ({"delay": -5}, InvalidDuration),
])
def test_bad_start_times_are_refused_before_anything_is_stored(env: WorkflowEnv, options: dict[str, object],
                                                                 error: type[Exception]) -> None:
    with pytest.raises(error):
        flows.report.options(**options).start("x")
    assert len(env.store.runs.items) == 0


def test_the_guide_example_runs() -> None:
    from tests.testing.guide_blocks import guide_example

    with WorkflowEnv(start=time.time()) as env:  # the example takes the real time for its start_at
        example = guide_example("Delayed start")
        assert example["later"].status() == RunStatus.DELAYED and example["in_two_hours"].status() == RunStatus.DELAYED
        assert set(example["waiting"]) == {example["later"].run_id, example["in_two_hours"].run_id}
        env.run_until_idle()
        assert env.result(example["later"]) == "reminded u-1"
        assert example["in_two_hours"].status() == RunStatus.CANCELLED


def test_a_delayed_run_of_a_limited_workflow_holds_up_no_one_before_its_start(env: WorkflowEnv) -> None:
    from tests.testing import workflow_limit_flows as limited

    limited.EVENTS.clear()
    begin = env.clock.now()
    late = env.apply_async(limited.two_at_a_time, ["late"], delay="1h")
    runs = [env.start(limited.two_at_a_time, label) for label in ("a", "b")]
    for run in runs:
        env.run_until_complete(run)  # both ran at once: the delayed run took no slot
    assert [(e, label) for e, label, _ in limited.EVENTS][:2] == [("began", "a"), ("began", "b")]
    assert late.status() == RunStatus.DELAYED
    assert env.run_until_complete(late) == "late"
    assert [t for e, label, t in limited.EVENTS if (e, label) == ("began", "late")] == [begin + 3600]
