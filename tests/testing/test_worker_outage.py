"""Recovery waits for workers (invariant 16, docs/reliability.md): an outage of every worker while
beat runs, however long, fails no run; a run whose worker takes it and dies with it, every time,
still fails at ``max_recovery_attempts``."""

from __future__ import annotations

import functools

import pytest

from tests.testing import kit_flows as flows
from workflows import RunStatus
from workflows.core.model.records import ResumeMessage
from workflows.core.ops.steps import run_worker_task
from workflows.testing import WorkflowEnv

DAY = 86_400.0


def test_a_day_long_outage_of_every_worker_fails_no_run(workflow_env: WorkflowEnv) -> None:
    flows.CALLS.clear()
    settings, driver = workflow_env.settings, workflow_env.driver
    run = workflow_env.start(flows.kit_long_sleep, 1)
    driver.settle()  # a worker runs the first step; the run sleeps for a day
    assert flows.CALLS == {"note:before": 1} and run.status() == RunStatus.SUSPENDED

    driver.jump_to(driver.next_due(schedules=False) or 0)  # every worker is down from here
    driver.tick()  # beat fires the sleep's timer: the run's resume waits in its queue, leased
    began = workflow_env.clock.now()
    while workflow_env.clock.now() < began + DAY:  # beat sweeps on, every sweep interval
        driver.jump_to(workflow_env.clock.now() + settings.sweep_interval * 12)
        driver.tick()
    record = workflow_env.store.get_run(run.run_id)
    assert not record.is_terminal and record.recovery_faults == 0
    resumes = [m for m in workflow_env.transport.queue if isinstance(m, ResumeMessage)]
    assert 20 <= len(resumes) <= 32  # the timer's wake, then re-sends backing off to one an hour
    assert len(resumes) == record.recoveries + 1

    driver.settle()  # the fleet is back: the run goes on from its queued resumes
    assert run.result() == "after"
    assert flows.CALLS == {"note:before": 1, "note:after": 1}


def test_a_backlog_twenty_leases_long_fails_no_run(workflow_env: WorkflowEnv) -> None:
    flows.CALLS.clear()
    settings, driver = workflow_env.settings, workflow_env.driver
    runs = [workflow_env.start(flows.kit_long_sleep, 1) for _ in range(3)]
    driver.settle()
    driver.jump_to(driver.next_due(schedules=False) or 0)
    for _ in range(2):  # each run waits twice in a queue 20 leases long (its wake, then its next step)
        driver.tick()
        for _ in range(20):
            driver.jump_to(workflow_env.clock.now() + settings.lease_seconds)
            driver.tick()
        driver.deliver()  # the queue drains at last
    driver.settle()
    assert [r.result() for r in runs] == ["after"] * 3
    assert all(workflow_env.store.get_run(r.run_id).recovery_faults == 0 for r in runs)


def test_a_run_that_kills_its_worker_every_time_fails_at_the_cap(workflow_env: WorkflowEnv) -> None:
    flows.CALLS.clear()
    settings, driver, engine = workflow_env.settings, workflow_env.driver, workflow_env.engine
    flows.DEADLY[0] = True
    try:
        run = workflow_env.start(flows.kit_crash_loop)
        for _ in range(100):
            while (message := workflow_env.transport.take()) is not None:  # a worker takes it and dies
                with pytest.raises(flows.WorkerDied):
                    run_worker_task(engine, functools.partial(driver._run_task, message))
            if run.status() == RunStatus.FAILED:
                break
            driver.jump_to(workflow_env.clock.now() + settings.lease_seconds)
            driver.tick()
    finally:
        flows.DEADLY[0] = False
    record = workflow_env.store.get_run(run.run_id)
    assert record.status == RunStatus.FAILED
    assert f"recovery attempts exhausted ({settings.max_recovery_attempts})" in (record.error or "")
    assert record.recovery_faults == settings.max_recovery_attempts
    assert flows.CALLS == {"deadly": settings.max_recovery_attempts + 1}  # its start, then each recovery
