"""Retention: the setting, the TTL of an ended run, and the sweep of beat."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.unit import tag_flows as flows
from workflows.core.background.sweeper import sweep
from workflows.core.storage.retention import retain_ended_runs, retain_until
from workflows.errors import ConfigurationError, StorageError
from workflows.settings import DEFAULT_RETENTION_SECONDS, Settings
from workflows.testing import WorkflowEnv


@pytest.mark.parametrize(("text", "seconds"), [(None, DEFAULT_RETENTION_SECONDS), ("", DEFAULT_RETENTION_SECONDS),
                                               ("90d", 90 * 86400.0), ("1h", 3600.0), ("7200", 7200.0),
                                               ("off", None), ("Never", None)])
def test_the_retention_setting(text: str | None, seconds: float | None) -> None:
    env = {} if text is None else {"WORKFLOWS_RETENTION": text}
    assert Settings.from_env(env).retention == seconds


@pytest.mark.parametrize(("text", "message"), [("30m", "at least 1h"), ("soon", "WORKFLOWS_RETENTION"),
                                               ("-1d", "WORKFLOWS_RETENTION")])
def test_a_bad_retention_setting_is_refused_naming_it(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Settings.from_env({"WORKFLOWS_RETENTION": text})


def test_the_ttl_is_retention_after_the_end_rounded_up() -> None:
    assert retain_until(1000.25, Settings(retention=3600.0)) == 4601
    assert retain_until(1000.0, Settings(retention=3600.0)) == 4600
    assert retain_until(1000.0, Settings(retention=None)) is None


def test_beat_stamps_a_run_a_lease_after_its_end(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.apply_async(flows.tag_order, ["o-r"], tags={"customer": "c-r"})
    run.result()
    engine, store = workflow_env.engine, workflow_env.store
    assert retain_ended_runs(engine) == 0  # not before a lease has passed
    workflow_env.clock.advance(engine.settings.lease_seconds + 1)  # the clock alone: no beat tick
    assert retain_ended_runs(engine) == 1
    expected = store.get_run(run.run_id).retain_until
    tags = [i for i in store.run_tags.items.values() if i["run_key"].endswith(run.run_id)]
    history = [i for i in store.events.items.values() if i["run_id"] == run.run_id]
    assert tags and {i.get("retain_until") for i in tags} == {expected}
    assert history and all(i["retain_until"] >= expected for i in history)  # written expiring later: not stamped
    assert retain_ended_runs(engine) == 0


def test_an_unreadable_retention_index_does_not_stop_timers_or_recovery(workflow_env: WorkflowEnv) -> None:
    def intercept(request: str, apply: Callable[[], Any]) -> Any:
        if request == "query ended runs":
            raise StorageError("query ended runs failed: ValidationException (no index by_retention)")
        return apply()

    workflow_env.store.interceptor = intercept
    assert sweep(workflow_env.engine) == {"timers": 0, "recovered": 0, "retained": 0, "kept_alive": 0}


def test_a_budget_bounds_the_stamping_of_one_sweep() -> None:
    """Beat stamps within a budget, so a backlog of ended runs never holds up the timers and
    schedules of its next tick (a tick stamping 100 runs on moto delayed a 2 s sleep to 8 s)."""
    with WorkflowEnv(deleting=False) as workflow_env:  # the kit's own sweeps would stamp them
        _stamp_three_in_two_sweeps(workflow_env)


def _stamp_three_in_two_sweeps(workflow_env: WorkflowEnv) -> None:
    for i in range(3):
        workflow_env.start(flows.tag_order, f"o-b{i}").result()
    workflow_env.clock.advance(workflow_env.engine.settings.lease_seconds + 1)
    assert retain_ended_runs(workflow_env.engine, budget=0.0) == 1  # at least one run a sweep, then stop
    assert retain_ended_runs(workflow_env.engine) == 2  # the rest wait for the next sweep
