"""``workflows.logger``: a line logged by workflow code is logged once, not again on each replay
(after a sleep, a step, a duplicate or recovering resume), and carries the run's ids."""

from __future__ import annotations

import logging

import pytest

import workflows
from tests.testing import det_flows as flows
from tests.testing.guide_blocks import guide_example
from workflows.settings import Settings
from workflows.testing import WorkflowEnv

LOGGER = "workflows.workflow"


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_each_line_is_logged_once_across_replays(workflow_env: WorkflowEnv,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    run = workflow_env.start(flows.det_logged, 3)
    assert run.result() == "done"
    assert lines(caplog) == ["starting 3", "echoed", "tick 0", "tick 1", "tick 2", "done"]
    ticks = [r for r in caplog.records if r.getMessage().startswith("tick")]
    assert {(r.run_id, r.workflow) for r in ticks} == {(run.run_id, "det_logged")}  # type: ignore[attr-defined]
    assert [r.tick for r in ticks] == [0, 1, 2]  # type: ignore[attr-defined]  # the caller's extra kept


def test_a_duplicate_or_recovering_resume_logs_nothing_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    with WorkflowEnv(settings=Settings(in_place_seconds=0)) as env:  # the step is sent, not run in place
        run = env.start(flows.det_logged, 0)
        start = env.transport.take()
        assert start is not None
        env.driver._run_task(start)  # runs to the step and sends it
        env.engine.resume(run.run_id)  # a duplicate resume while the step is in flight
        env.engine.resume(run.run_id, recovering=True)  # and a recovery (it re-sends the step)
        assert lines(caplog) == ["starting 0"]
        assert run.result() == "done"
    assert lines(caplog) == ["starting 0", "echoed", "done"]


def test_outside_a_workflow_it_logs_as_its_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    workflows.logger.info("plain %s", 1)
    assert lines(caplog) == ["plain 1"]


def test_the_guide_example_runs(workflow_env: WorkflowEnv, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    example = guide_example("Logging from workflow code")
    assert workflow_env.start(example["nightly"], "eu").result() == "reported eu"
    assert [r.getMessage() for r in caplog.records if r.name in (LOGGER, "billing")] == [
        "nightly report for eu", "waiting a day", "reported eu"]
