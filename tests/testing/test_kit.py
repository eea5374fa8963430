"""The kit's other promises: retries with injected failures, signals, cancel, fan-out,
children, continue-as-new, and nothing leaking from one env to the next."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.testing import kit_flows as flows
from workflows import RunCancelled, RunFailed, RunStatus, step, workflow
from workflows.core.model.registry import get_workflow
from workflows.errors import RegistrationError, UnknownWorkflow
from workflows.runtime import get_engine
from workflows.testing import WorkflowEnv


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    flows.CALLS.clear()


@pytest.mark.parametrize("inline", [False, True])
def test_injected_failures_are_retried_by_the_step_policy(workflow_env: WorkflowEnv, inline: bool) -> None:
    name = "kit_inline_charge" if inline else "kit_charge"
    injected = workflow_env.fail_step(name, times=2, error=ConnectionError("gateway down"))
    began = workflow_env.now
    run = workflow_env.start(flows.kit_pay, 500, inline)
    assert run.result() == "charged 500"
    assert injected.raised == 2 and flows.CALLS == {name.removeprefix("kit_"): 1}  # the body ran once
    [charge] = workflow_env.steps(run)
    assert (charge.name, charge.status, charge.attempts) == (name, "completed", 3)
    waited = (workflow_env.now - began).total_seconds()
    assert waited == (1 + 2 if inline else 60 + 120)  # the backoffs, skipped: retry_delay * backoff**(n-1)


def test_a_step_failing_every_attempt_fails_the_run(workflow_env: WorkflowEnv) -> None:
    workflow_env.fail_step(flows.kit_charge, times=None, error=ConnectionError)
    run = workflow_env.start(flows.kit_pay, 500, False)
    with pytest.raises(RunFailed, match="ConnectionError: injected failure of step 'kit_charge'"):
        run.result()
    [charge] = workflow_env.steps(run)
    assert (charge.status, charge.attempts) == ("failed", 4)


def test_a_retry_after_is_skipped_too(workflow_env: WorkflowEnv) -> None:
    began = workflow_env.now
    assert workflow_env.start(flows.kit_gateway).result() == "ok"
    assert workflow_env.now - began == timedelta(hours=1)


def test_signals_are_delivered_in_send_order(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.kit_cart)
    workflow_env.signal(run, "cart", "tea")
    workflow_env.advance("10m")  # the run takes "tea" and waits again
    assert run.status() == RunStatus.SUSPENDED
    workflow_env.signal(run, "cart", "cup")
    workflow_env.signal(run, "cart", "checkout")
    assert run.result() == {"items": ["tea", "cup"], "closed_by": "checkout"}


def test_a_signal_wait_times_out_on_the_virtual_clock(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.kit_cart)
    assert run.result() == {"items": [], "closed_by": "timeout"}


def test_cancel_ends_a_sleeping_run(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.kit_wait_forever)
    workflow_env.advance("1d")
    workflow_env.cancel(run)
    with pytest.raises(RunCancelled):
        workflow_env.run_until_complete(run)
    assert run.status() == RunStatus.CANCELLED
    assert workflow_env.store.next_due_at() is None  # its timer went with it


def test_fan_out(workflow_env: WorkflowEnv) -> None:
    assert workflow_env.start(flows.kit_fan, 5).result() == [0, 1, 4, 9, 16]


def test_fan_out_with_a_failing_branch(workflow_env: WorkflowEnv) -> None:
    workflow_env.fail_step(flows.kit_square, times=None, error=ValueError("bad input"))
    with pytest.raises(RunFailed, match="ParallelError"):
        workflow_env.start(flows.kit_fan, 3).result()


def test_a_child_workflow(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.kit_parent, [2, 3])
    assert run.result() == 13
    children = run.children()
    assert len(children) == 2 and all(c.status() == RunStatus.COMPLETED for c in children)
    assert all(c.parent() == run for c in children)


def test_continue_as_new_is_followed(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.kit_countdown, 3)
    assert run.result() == 0
    assert len(run.chain()) == 4


def test_a_workflow_defined_in_a_test_is_forgotten_after_it() -> None:
    with WorkflowEnv() as env:
        @step
        def kit_local_double(x: int) -> int:
            return 2 * x

        @workflow
        def kit_local(x: int) -> int:
            return kit_local_double(x)

        assert env.start(kit_local, 4).result() == 8
        assert get_engine() is env.engine
    with pytest.raises(UnknownWorkflow):
        get_workflow("kit_local")
    with WorkflowEnv() as again:  # a fresh store: nothing of the first env
        assert again.runs() == []


def test_an_injected_failure_ends_with_its_env() -> None:
    with WorkflowEnv() as env:
        env.fail_step(flows.kit_square, times=None)
        with pytest.raises(RunFailed):
            env.start(flows.kit_fan, 1).result()
    with WorkflowEnv() as env:
        assert env.start(flows.kit_fan, 2).result() == [0, 1]


def test_names_stay_checked_inside_an_env(workflow_env: WorkflowEnv) -> None:
    with pytest.raises(RegistrationError):
        @workflow(name="kit_fan")
        def another(n: int) -> int:
            return n
