"""Time skipping: sleeps, hook timeouts and schedule fires happen on the virtual clock, so
days of workflow time take milliseconds. Wall times are printed (``-s``), not asserted."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from tests.testing import kit_flows as flows
from workflows import RunStatus
from workflows.errors import Stalled
from workflows.testing import WorkflowEnv


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    flows.CALLS.clear()


def test_a_thirty_day_sleep(workflow_env: WorkflowEnv) -> None:
    began, wall = workflow_env.now, time.perf_counter()
    run = workflow_env.start(flows.kit_long_sleep, 30)
    assert run.result() == "after"
    print(f"30-day sleep: {time.perf_counter() - wall:.4f} s wall")
    assert workflow_env.now - began == timedelta(days=30)
    assert [(s.name, s.status, s.attempts) for s in workflow_env.steps(run)] == [
        ("kit_note", "completed", 1), ("kit_note", "completed", 1)]


def test_a_sleep_does_not_end_before_its_time(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.kit_long_sleep, 30)
    workflow_env.advance(timedelta(days=29, hours=23))
    assert run.status() == RunStatus.SUSPENDED and flows.CALLS == {"note:before": 1}
    workflow_env.advance("1h")
    assert run.status() == RunStatus.COMPLETED and flows.CALLS["note:after"] == 1


def test_a_two_day_hook_timeout(workflow_env: WorkflowEnv) -> None:
    began, wall = workflow_env.now, time.perf_counter()
    run = workflow_env.start(flows.kit_approval, "2d")
    assert run.result() == "expired"
    print(f"2-day hook timeout: {time.perf_counter() - wall:.4f} s wall")
    assert workflow_env.now - began == timedelta(days=2)


def test_a_hook_resumed_by_name_before_its_timeout(workflow_env: WorkflowEnv) -> None:
    began = workflow_env.now
    run = workflow_env.start(flows.kit_approval, "2d")
    workflow_env.advance("1d")
    workflow_env.resume_hook(run, "approve", {"approved": True})
    assert workflow_env.run_until_complete(run) == {"approved": True}
    assert workflow_env.now - began == timedelta(days=1)  # the 2-day timeout was not waited for


def test_a_run_waiting_for_the_test_is_reported_not_waited_for(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.kit_approval, None)
    with pytest.raises(Stalled, match="hook_wait approve") as caught:
        workflow_env.run_until_complete(run)
    assert "wh_" not in str(caught.value)  # never a token in a message


def test_a_daily_schedule_over_three_virtual_days(workflow_env: WorkflowEnv) -> None:
    wall = time.perf_counter()
    workflow_env.create_schedule(flows.kit_daily_report, cron="0 6 * * *", args=["daily"], schedule_id="daily")
    workflow_env.advance(timedelta(days=3))
    print(f"3 days of a daily schedule: {time.perf_counter() - wall:.4f} s wall")
    runs = workflow_env.runs(flows.kit_daily_report)
    assert [r.status() for r in runs] == [RunStatus.COMPLETED] * 3
    fired = [r.record().fire_time for r in runs]
    assert [f - fired[0] for f in fired] == [0, 86400, 172800]  # each at 06:00 of its own day
    assert all(r.record().created_at == r.record().fire_time for r in runs)  # started at its virtual fire time
    assert flows.CALLS == {"note:daily": 3}


def test_run_until_idle_fires_every_timer_but_no_schedule(workflow_env: WorkflowEnv) -> None:
    workflow_env.create_schedule(flows.kit_daily_report, every="1h", args=["hourly"])
    sleeper = workflow_env.start(flows.kit_long_sleep, 2)
    workflow_env.run_until_idle()
    assert sleeper.status() == RunStatus.COMPLETED
    assert workflow_env.runs(flows.kit_daily_report) != []  # fired while the clock passed them
