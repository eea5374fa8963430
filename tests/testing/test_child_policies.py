"""Children (issue 27, item 7) in the testing kit: a detached start, and the parent-close policies
(cancel, request_cancel, abandon, and the default rule)."""

from __future__ import annotations

import functools

import pytest

from tests.testing import delay_flows as flows
from workflows import ChildDetached, InvalidChildOptions, RunFailed, RunHandle, RunStatus
from workflows.core.model.records import StepMessage, TimerKind
from workflows.core.ops.steps import run_worker_task
from workflows.core.replay.children import close_timer_id
from workflows.settings import Settings
from workflows.testing import WorkflowEnv


@pytest.fixture
def env() -> WorkflowEnv:
    with WorkflowEnv() as kit:
        yield kit


def child_of(env: WorkflowEnv, parent: str) -> str:
    return str(env.run_until_complete(parent))


@pytest.mark.parametrize("policy, ends", [("cancel", "cancelled"), ("request_cancel", "cancelled"),
                                          ("abandon", "completed"), (None, "completed")])
def test_a_completed_parent_closes_its_child_by_its_policy(env: WorkflowEnv, policy: str | None,
                                                             ends: str) -> None:
    parent = env.start(flows.parent, policy)
    child = env.run_until_complete(parent)
    env.run_until_idle()  # a left child sleeps its day out
    record = env.store.get_run(child)
    assert (record.status, record.parent_run_id) == (ends, parent.run_id)
    assert not [t for t in env.store.timers.items.values() if t["kind"] == TimerKind.PARENT_CLOSE.value]


@pytest.mark.parametrize("policy, ends", [("cancel", "cancelled"), ("request_cancel", "cancelled"),
                                          ("abandon", "completed"), (None, "cancelled")])
def test_a_cancelled_parent_closes_its_child_by_its_policy(env: WorkflowEnv, policy: str, ends: str) -> None:
    parent = env.start(flows.sleepy_parent, policy)
    env.driver.settle()
    child = parent.children()[0]
    parent.cancel()
    env.run_until_idle()
    assert parent.status() == RunStatus.CANCELLED
    assert child.status() == ends


def test_a_detached_child_outlives_its_parent_and_is_no_child_of_it(env: WorkflowEnv) -> None:
    parent = env.start(flows.detaching_parent)
    child = env.run_until_complete(parent)
    record = env.store.get_run(child)
    assert (record.status, record.parent_run_id) == ("suspended", None)  # asleep for its day, unlinked
    assert [c.run_id for c in parent.children()] == [child]  # the parent's history names it
    env.run_until_idle()
    assert env.store.get_run(child).status == "completed"
    assert not [e for e in env.store.read_history(parent.run_id) if e.kind == "child_end"]  # nothing written back


def test_a_detached_child_cannot_be_waited_for(env: WorkflowEnv) -> None:
    parent = env.start(flows.waits_on_detached)
    with pytest.raises(RunFailed, match="ChildDetached"):
        env.run_until_complete(parent)
    assert ChildDetached.__name__ in (parent.record().error or "")


@pytest.mark.parametrize("policy, cancelled", [("cancel", False), (None, True)])
def test_a_parent_whose_process_died_before_closing_its_children_has_them_closed_by_beat(
        env: WorkflowEnv, policy: str | None, cancelled: bool) -> None:
    """The default rule too: a cancelled parent's worker that died after the end's write left its
    children running for ever before the end wrote its parent_close timer."""
    parent = env.start(flows.sleepy_parent, policy) if cancelled else env.start(flows.parent, policy)
    child = RunHandle(f"{parent.run_id}.0")
    if cancelled:
        env.driver.settle()
        parent.cancel()
    original = env.engine.after_end

    def die_after_the_end(*args: object, **kwargs: object) -> None:
        raise SystemExit("the worker died after the end's write")

    env.engine.after_end = die_after_the_end  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        env.driver.settle()
    env.engine.after_end = original  # type: ignore[method-assign]
    assert parent.status() == ("cancelled" if cancelled else "completed") and not child.record().is_terminal
    env.run_until_idle()  # beat fires the parent_close timer
    assert child.status() == RunStatus.CANCELLED
    assert close_timer_id(parent.run_id) not in {t["timer_id"] for t in env.store.timers.items.values()}


@pytest.mark.parametrize("options", [{"parent_close_policy": "terminate"}, {"detached": "yes"},
                                     {"detached": True, "parent_close_policy": "cancel"}])
def test_bad_child_options_fail_the_parent_naming_them(env: WorkflowEnv, options: dict[str, object]) -> None:
    from workflows import workflow

    @workflow(name="delay_bad_parent")
    def bad_parent() -> str:
        return str(flows.long_child.options(**options).start(1).run_id)

    with pytest.raises(RunFailed, match="InvalidChildOptions"):
        env.run_until_complete(env.start(bad_parent))


def test_child_options_outside_a_workflow_are_refused(env: WorkflowEnv) -> None:
    with pytest.raises(InvalidChildOptions):
        flows.long_child.options(detached=True).start(1)
    with pytest.raises(InvalidChildOptions):
        flows.long_child.options(parent_close_policy="abandon").start(1)
    assert len(env.store.runs.items) == 0


def deliver_holding_steps(env: WorkflowEnv, run_id: str) -> list[StepMessage]:
    """Deliver every queued message but the step messages of ``run_id`` (returned, held back)."""
    held: list[StepMessage] = []
    while (message := env.transport.take()) is not None:
        if isinstance(message, StepMessage) and message.run_id == run_id:
            held.append(message)
            continue
        run_worker_task(env.engine, functools.partial(env.driver._run_task, message))
    return held


@pytest.mark.parametrize("policy", ["cancel", "request_cancel"])
def test_cancel_ends_the_child_at_once_request_cancel_after_its_step(policy: str) -> None:
    with WorkflowEnv(settings=Settings(in_place_seconds=0)) as env:  # every step is sent as a message
        cancel_during_a_step(env, policy)


def cancel_during_a_step(env: WorkflowEnv, policy: str) -> None:
    parent = env.start(flows.parent_of_stepping, policy)
    child = RunHandle(f"{parent.run_id}.0")  # a child's id: its parent's and its start's position
    held = deliver_holding_steps(env, child.run_id)  # the parent starts its child and sleeps
    assert parent.children() == [child]
    assert held and child.status() == RunStatus.RUNNING  # its step is in flight
    parent.cancel()
    assert not deliver_holding_steps(env, child.run_id)  # the parent ends and closes its child
    record = child.record()
    if policy == "cancel":  # ended now: the step's outcome slot is taken, its result will be refused
        assert record.status == "cancelled"
    else:  # asked: it ends when its step returns
        assert (record.status, record.cancel_requested) == ("running", True)
    for message in held:
        env.transport.send_step(message)
    env.run_until_idle()
    assert child.status() == RunStatus.CANCELLED


def test_the_guide_example_runs(env: WorkflowEnv) -> None:
    from tests.testing.guide_blocks import guide_example

    example = guide_example("Detached children and parent-close policies")
    run = env.start(example["checkout"], "o-1")
    tracking = env.run_until_complete(run)["tracking"]
    assert env.store.get_run(tracking).status == "cancelled"
    audit = RunHandle(f"{run.run_id}.0")
    assert audit.parent() is None and audit.status() == RunStatus.SUSPENDED
    env.run_until_idle()
    assert env.result(audit) == "archived o-1"
