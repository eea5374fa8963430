"""A worker outage with beat running (docs/reliability.md, "Limits worth knowing"): beat
recovers each leased run once per lease until its recoveries are spent and fails it; once
workers are back, ``rerun`` starts it again after its last recorded op."""

from __future__ import annotations

from tests.testing import kit_flows as flows
from workflows import RunStatus
from workflows.core.records import ResumeMessage
from workflows.testing import WorkflowEnv


def test_an_outage_past_the_recovery_cap_fails_the_run_and_rerun_completes_it(workflow_env: WorkflowEnv) -> None:
    flows.CALLS.clear()
    settings = workflow_env.settings
    driver = workflow_env.driver
    run = workflow_env.start(flows.kit_long_sleep, 1)
    driver.settle()  # a worker runs the first step; the run sleeps for a day
    assert flows.CALLS == {"note:before": 1} and run.status() == RunStatus.SUSPENDED

    driver.jump_to(driver.next_due(schedules=False) or 0)  # every worker is down from here
    driver.tick()  # beat fires the sleep's timer: the run's resume waits in its queue, leased
    began = workflow_env.clock.now()
    for _ in range(100):  # beat ticks once per lease
        driver.jump_to(workflow_env.clock.now() + settings.lease_seconds)
        driver.tick()
        if run.status() == RunStatus.FAILED:
            break
    outage = workflow_env.clock.now() - began
    assert run.status() == RunStatus.FAILED
    error = workflow_env.store.get_run(run.run_id).error or ""
    assert f"recovery attempts exhausted ({settings.max_recovery_attempts})" in error
    assert outage >= settings.max_recovery_attempts * settings.lease_seconds
    resumes = [m for m in workflow_env.transport.queue if isinstance(m, ResumeMessage)]
    assert len(resumes) == settings.max_recovery_attempts + 1  # the timer's wake and each recovery

    driver.settle()  # workers are back: the queued resumes find the run ended and do nothing
    assert run.status() == RunStatus.FAILED and flows.CALLS == {"note:before": 1}
    again = run.rerun()
    assert again.result() == "after"
    assert flows.CALLS == {"note:before": 1, "note:after": 1}  # the recorded step was reused, not run again
