"""Flow control on the virtual clock: a step waits for a slot or a token on a timer, never on
a thread, and runs when the slot frees (or its dead holder's lease passes) or a token is due."""

from __future__ import annotations

import secrets

import pytest

from tests.testing import flow_flows as flows
from workflows import RunStatus
from workflows.core.storage.payloads import reference_of
from workflows.settings import Settings
from workflows.testing import WorkflowEnv


@pytest.fixture(autouse=True)
def _reset() -> None:
    flows.STARTS.clear()


def test_a_step_waits_for_the_slot_of_its_key_and_runs_once_it_is_released(workflow_env: WorkflowEnv) -> None:
    store, began = workflow_env.store, workflow_env.clock.now()
    assert store.acquire_slot("step:flow_one_per_customer#c1", 1, "someone", began + 3600) == 0
    held = workflow_env.start(flows.flow_customer_job, "c1")
    free = workflow_env.start(flows.flow_customer_job, "c2")  # another key is not limited by c1's slot
    workflow_env.advance("20s")
    assert free.status() == RunStatus.COMPLETED
    assert held.status() == RunStatus.RUNNING and [label for label, _ in flows.STARTS] == ["c2"]
    assert any(t.kind == "retry" and t.run_id == held.run_id for t in store.due_timers(limit=100) or
               _pending_timers(workflow_env))
    assert store.release_slot("step:flow_one_per_customer#c1", 0, "someone")
    assert held.result() == "c1-1"
    assert flows.STARTS[-1][0] == "c1" and flows.STARTS[-1][1] - began >= 20
    assert store.slot_holders("step:flow_one_per_customer#c1") == []  # released after the attempt


def test_the_slot_of_a_dead_holder_is_reclaimed_when_its_lease_passes(workflow_env: WorkflowEnv) -> None:
    store, began = workflow_env.store, workflow_env.clock.now()
    store.acquire_slot("step:flow_one_per_customer#c1", 1, "dead-worker", began + 120)  # never renewed
    run = workflow_env.start(flows.flow_customer_job, "c1")
    assert run.result() == "c1-1"
    assert 120 <= flows.STARTS[0][1] - began < 120 + 3 * workflow_env.settings.sweep_interval


def test_a_rate_limited_chain_starts_one_step_per_token(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.flow_rated_chain, 6)
    assert run.result() == list(range(6))
    times = [t for _, t in flows.STARTS]
    assert len(times) == 6
    assert all(b - a >= 0.5 - 1e-3 for a, b in zip(times, times[1:], strict=False)), times


def test_rate_limited_branches_never_start_faster_than_the_rate(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.flow_rated_fan_out, 10)
    assert run.result() == list(range(10))
    times = sorted(t for _, t in flows.STARTS)
    assert len(times) == 10
    for i, first in enumerate(times):  # in any window of w seconds: at most burst + 2 * w starts
        for last in times[i + 1:]:
            assert len([t for t in times if first <= t <= last]) <= 1 + 2 * (last - first) + 1e-6


def test_a_rate_per_key_gives_every_key_its_own_bucket(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.flow_tenants, 4)
    run.result()
    for tenant in ("a", "b"):
        times = sorted(t for label, t in flows.STARTS if label == tenant)
        assert len(times) == 4
        assert times[1] - times[0] < 1e-6  # a burst of 2 at once
        assert times[3] - times[0] >= 2 - 1e-3  # then one a second
    first = min(t for _, t in flows.STARTS)
    assert sum(1 for _, t in flows.STARTS if t == first) == 4  # both tenants' bursts at once


def test_a_keyed_limit_reads_its_key_from_arguments_kept_in_the_payload_bucket() -> None:
    """Arguments over the payload threshold travel as a reference: the limit keys are read from
    the arguments it stands for (issue 23, item 3: the reference text was decoded instead)."""
    settings = Settings(payload_threshold_bytes=1024, hook_secret=secrets.token_urlsafe(32))
    document = "d" * 5000
    with WorkflowEnv(settings=settings) as env:
        store, began = env.store, env.clock.now()
        assert store.acquire_slot("step:flow_large_per_customer#c1", 1, "someone", began + 3600) == 0
        held = env.start(flows.flow_large_customer_job, "c1", document)
        free = env.start(flows.flow_large_customer_job, "c2", document)
        env.advance("20s")
        assert reference_of(store.get_run(held.run_id).args) is not None  # the arguments are in the bucket
        assert free.status() == RunStatus.COMPLETED and free.result() == 5000
        assert held.status() == RunStatus.RUNNING and [label for label, _ in flows.STARTS] == ["c2"]
        assert store.release_slot("step:flow_large_per_customer#c1", 0, "someone")
        assert held.result() == 5000
        assert [label for label, _ in flows.STARTS] == ["c2", "c1"]
        assert store.slot_holders("step:flow_large_per_customer#c1") == []


def _pending_timers(env: WorkflowEnv) -> list:  # type: ignore[type-arg]
    """Timers not yet due (the store's due index read far in the future)."""
    clock = env.clock
    saved = clock.time
    clock.time = saved + 10_000
    try:
        return env.store.due_timers(limit=1000)
    finally:
        clock.time = saved


def test_a_timed_out_body_keeps_its_slot_while_virtual_time_passes(workflow_env: WorkflowEnv) -> None:
    """The kit moves its clock only once a body that outlived its timeout has returned, so the slot it
    keeps is never taken by virtual time passing (as real workers keep it, tests/e2e/test_flow_limits.py)."""
    flows.OVERRUN.update(inside=0, peak=0)
    runs = [workflow_env.start(flows.kit_slot_overrun_job, n) for n in range(3)]
    assert [workflow_env.run_until_complete(r) for r in runs] == ["StepFailed"] * 3
    assert flows.OVERRUN["peak"] == 1
