"""A live run reaches what it needs of other runs after retention deleted their items
(invariant 14): a child's result, a chain's current run, signals across continue-as-new."""

from __future__ import annotations

from typing import Any

import pytest

from tests.testing import lineage_flows as flows
from workflows import RunStatus, get_run
from workflows.errors import RunEnded
from workflows.testing import WorkflowEnv


def test_a_child_result_survives_the_child_expiry(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.lineage_patient_parent, 20)
    assert run.result() == 41  # at day 60: the child's items expired at day 30
    assert workflow_env.store.find_run(f"{run.run_id}.0") is None


def test_a_child_chain_continuing_for_40_days_reaches_its_parent(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.lineage_chain_parent, 40)
    assert run.result() == 40


def test_two_signals_pending_at_continue_as_new_both_arrive(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.lineage_signal_chain)
    workflow_env.signal(run, "item", "first")
    workflow_env.signal(run, "item", "second")
    assert run.result() == ["first", "second"]  # the second was taken by the successor
    assert len(run.chain()) == 2



def test_signals_arrive_in_send_order_when_the_later_senders_clock_is_behind(workflow_env: WorkflowEnv) -> None:
    """Simulator seed 2102: a client restarted on a host whose clock is behind sent "second"; the
    chain took it before "first" (the keys were ordered by the senders' clocks)."""
    run = workflow_env.start(flows.lineage_signal_chain)
    workflow_env.signal(run, "item", "first")
    workflow_env.clock.time -= 2.0  # the next sender's clock is two seconds behind the first's
    workflow_env.signal(run, "item", "second")
    workflow_env.clock.time += 2.0
    assert run.result() == ["first", "second"]

def test_a_signal_sent_to_the_first_run_of_a_chain_reaches_its_current_run(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.lineage_signal_chain)
    workflow_env.signal(run, "item", "first")
    workflow_env.advance("1h")  # the first run took it and continued
    assert run.record().status == RunStatus.CONTINUED  # its own status; status() is the chain's
    assert run.status() == RunStatus.SUSPENDED
    workflow_env.signal(run, "item", "second")
    assert run.result() == ["first", "second"]


def test_a_signal_to_a_long_chain_after_its_first_runs_expired(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.lineage_daily_then_signal, 40)
    workflow_env.advance("41d")  # the chain's runs of days 1..10 expired
    workflow_env.signal(run, "done", "yes")
    assert run.result() == "yes"


def test_a_signal_to_an_ended_chain_raises_run_ended(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.lineage_signal_chain)
    workflow_env.signal(run, "item", "first")
    workflow_env.signal(run, "item", "second")
    run.result()
    with pytest.raises(RunEnded):
        workflow_env.signal(run, "item", "third")


def test_a_cancel_of_the_first_run_id_cancels_the_chain(workflow_env: WorkflowEnv) -> None:
    from workflows import RunCancelled

    run = workflow_env.start(flows.lineage_daily, 40)
    workflow_env.advance("35d")
    workflow_env.cancel(run)
    with pytest.raises(RunCancelled):
        run.result()


def test_the_idempotency_key_reaches_a_long_chain(workflow_env: WorkflowEnv) -> None:
    first = workflow_env.apply_async(flows.lineage_daily, [60], idempotency_key="K")
    workflow_env.advance("45d")
    again = workflow_env.apply_async(flows.lineage_daily, [60], idempotency_key="K")
    assert again.run_id == first.run_id
    assert again.record().status == RunStatus.CONTINUED  # the chain's first run, kept while the chain lives
    assert get_run(again.run_id) == again
    assert again.result() == 60


def test_status_and_get_run_of_a_chains_first_run_reach_its_current_run(workflow_env: WorkflowEnv) -> None:
    """What docs/retention.md promises: the id ``start`` returned says the chain's status, not
    ``continued``, in two reads of run items (the anchor, the chain's latest run it names)."""
    run = workflow_env.start(flows.lineage_daily, 40)
    workflow_env.advance("35d")  # 35 continuations; the runs of the first days expired
    assert run.record().status == RunStatus.CONTINUED  # the first run's own item: the chain's anchor
    reads: list[str] = []

    def count(name: str, apply: Any) -> Any:
        reads.append(name)
        return apply()

    workflow_env.store.interceptor = count
    assert run.status() == RunStatus.SUSPENDED
    workflow_env.store.interceptor = None
    assert len(reads) == 2, reads
    assert get_run(run.run_id).status() == RunStatus.SUSPENDED
    assert run.result() == 40
    assert run.status() == get_run(run.run_id).status() == RunStatus.COMPLETED
    assert [c.record().status for c in run.chain()][-2:] == [RunStatus.CONTINUED, RunStatus.COMPLETED]


def test_the_chain_anchor_expires_with_the_chain(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.apply_async(flows.lineage_daily, [3], idempotency_key="K")
    assert run.result() == 3
    workflow_env.advance("1h")  # beat's sweep stamps the last run, which gives the anchor its TTL
    workflow_env.advance("1h")  # the next sweep stamps the anchor's items
    workflow_env.advance("45d")  # history items expire up to the horizon (14 days) later than the run
    assert workflow_env.store.find_run(run.run_id) is None
    assert workflow_env.store.run_for_key("K") is None
    assert not workflow_env.store.signal_items.items and not workflow_env.store.events.items
