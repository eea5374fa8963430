"""Fan-outs with completion criteria: done when N branches succeeded, failed when more than K failed;
the decision is recorded once and names the branches that counted, so branches that end after it
are ignored on replay, and a recovery tallies what a dead worker left untallied."""

from __future__ import annotations

from typing import Any

import pytest

from tests.testing import det_flows as flows
from tests.testing.guide_blocks import guide_example
from workflows.core.ops.fanout import join_id
from workflows.export import export_run
from workflows.settings import Settings
from workflows.testing import WorkflowEnv, replay


def test_done_when_enough_succeeded_and_later_branches_are_ignored(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.det_quorum, 5, [], 2, None)
    workflow_env.driver.settle()  # decided by branch 1: the run went on (to its sleep), branches 2-4 never ran
    join = join_id(run.run_id, 0)
    assert [r.index for r in workflow_env.store.branch_results(join, 5)] == [0, 1]
    workflow_env.store.record_branch(join, 3, "9", None)  # a branch that ends after the decision
    assert workflow_env.store.tally_branch(join, 3, False) == ({0, 1, 3}, set())
    # the replay after the sleep reads the decision: branch 3 does not count
    assert run.result() == {"values": [0, 1], "succeeded": [0, 1], "failed": [], "unfinished": [2, 3, 4]}


def test_failures_within_the_tolerance_are_in_the_result(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.det_quorum, 4, [1], None, 1)
    assert run.result() == {"values": [0, 4, 9], "succeeded": [0, 2, 3], "failed": [1], "unfinished": []}


def test_more_failures_than_tolerated_fail_the_fan_out_at_once(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.det_quorum, 5, [0, 1], None, 1)
    result = run.result()
    assert result["failed"] == [0, 1] and result["succeeded"] == []
    assert "2 of 5 branches failed, more than the 1 tolerated" in result["error"]
    assert "branch 0 (det_branch)" in result["error"] and "FatalError: branch 1 broke" in result["error"]


def test_a_quorum_that_cannot_be_reached_fails(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.det_quorum, 3, [2], 3, None)  # 3 of 3 needed, one fails
    assert run.result()["failed"] == [2]


def test_both_criteria(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.det_quorum, 6, [0], 3, 1)
    assert run.result() == {"values": [1, 4, 9], "succeeded": [1, 2, 3], "failed": [0], "unfinished": [4, 5]}


@pytest.mark.parametrize(("least", "return_exceptions", "message"), [
    (0, False, "min_successful must be an int from 1 to the number of branches (2), got 0"),
    (3, False, "got 3"),
    (1, True, "return_exceptions cannot be combined"),
])
def test_bad_criteria_are_refused(workflow_env: WorkflowEnv, least: int, return_exceptions: bool,
                                  message: str) -> None:
    assert message in workflow_env.start(flows.det_bad_criteria, least, return_exceptions).result()


def test_a_recovery_tallies_branches_a_dead_worker_left_and_decides(workflow_env: WorkflowEnv) -> None:
    env = workflow_env
    run = env.start(flows.det_quorum, 3, [], 2, None)
    start = env.transport.take()
    assert start is not None
    env.driver._run_task(start)  # dispatches the three branches
    branches: list[Any] = [env.transport.take() for _ in range(3)]
    assert all(b is not None and b.branch is not None for b in branches)
    join = join_id(run.run_id, 0)
    for index in (0, 1):  # recorded by workers that died before tallying; their messages are lost
        env.store.record_branch(join, index, str(index * index), None)
    env.engine.resume(run.run_id, recovering=True)  # the reconciler, once the lease expired
    assert run.result() == {"values": [0, 1], "succeeded": [0, 1], "failed": [], "unfinished": [2]}
    assert env.store.tally_branch(join, 0, False) == ({0, 1}, set())  # a repeat tallies nothing


def test_the_guide_example_runs() -> None:
    with WorkflowEnv(settings=Settings()) as env:
        example = guide_example("Completion criteria")
        assert env.start(example["price_check"], "sku-1").result() == {"price": 100, "sources": 2}


def test_an_exported_run_replays_clean() -> None:
    with WorkflowEnv() as env:
        run = env.start(flows.det_quorum, 4, [1], 2, 1)
        run.result()
        export = export_run(env.store, run.run_id)
    assert replay(export).ending == "returned"
