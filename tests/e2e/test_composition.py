"""Fan-out/fan-in, signals, child workflows and continue-as-new on real worker processes."""

from __future__ import annotations

import uuid

import boto3
import pytest

from tests.e2e import flows
from tests.waiting import wait_for
from workflows import RunCancelled, RunFailed, RunStatus, cancel, send_signal
from workflows.errors import RunEnded, RunNotFound

pytestmark = pytest.mark.e2e


def wait_status(run, status: RunStatus, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    wait_for(lambda: run.status() == status, timeout, poll=0.1, what=f"run {run.run_id} is {status}")


def test_redelivered_branches_resume_the_parent_exactly_once(cluster, spawn, settings) -> None:
    # A worker whose queue hides a message for only 2 s: each 3-second branch is
    # delivered again while it runs, so every branch completes at least twice.
    sqs = boto3.client("sqs", region_name=settings.region, endpoint_url=settings.sqs_endpoint)
    try:
        sqs.create_queue(QueueName=settings.queue_prefix + "dup", Attributes={"VisibilityTimeout": "2"})
    except sqs.exceptions.QueueNameExists:  # made earlier in the session (init-aws makes every step queue)
        url = sqs.get_queue_url(QueueName=settings.queue_prefix + "dup")["QueueUrl"]
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "2"})
    worker = spawn("worker", "-Q", "dup", "-c", "8")
    t = uuid.uuid4().hex[:10]
    try:
        run = flows.duplicated_fan_out.start(t, 4, 3.0)
        assert run.result(timeout=120) == [0, 1, 4, 9]
    finally:
        worker.kill()
    assert flows.executions(t) > 4  # duplicates really happened
    assert flows.executions(t + "-after") == 1  # ...and the parent went past the join once
    joins = [e for e in run.history() if e.kind == "parallel"]
    assert len(joins) == 1 and joins[0].status == "completed"


def test_a_failed_branch_fails_the_join_naming_it(cluster) -> None:
    run = flows.failing_fan_out.start(False)
    with pytest.raises(RunFailed) as info:
        run.result(timeout=60)
    assert "ParallelError" in str(info.value) and "branch 2 (boom)" in str(info.value)


def test_return_exceptions_puts_errors_in_place(cluster) -> None:
    run = flows.failing_fan_out.start(True)
    result = run.result(timeout=60)
    assert result[:2] == [0, 1] and result[3] == 3
    assert "branch two is broken" in result[2]


def test_signals_sent_before_the_wait_arrive_in_order(cluster) -> None:
    run = flows.signal_collector.start(3)
    for i in range(3):
        send_signal(run.run_id, "item", {"n": i})
    assert run.result(timeout=60) == [{"n": 0}, {"n": 1}, {"n": 2}]


def test_signal_wait_times_out(cluster) -> None:
    assert flows.signal_or_timeout.start(1.0).result(timeout=60) == "timed out"


def test_signal_to_unknown_or_ended_run_is_refused(cluster) -> None:
    with pytest.raises(RunNotFound):
        send_signal("no-such-run", "item", 1)
    run = flows.sequence.start(1)
    run.result(timeout=60)
    with pytest.raises(RunEnded):
        send_signal(run.run_id, "item", 1)


def test_child_results_reach_the_parent(cluster) -> None:
    run = flows.parent_of_children.start(3)
    assert run.result(timeout=90) == [0, 2, 4]
    children = run.children()
    assert len(children) == 3
    assert all(child.parent() == run for child in children)
    assert [child.result(timeout=5) for child in children] == [0, 2, 4]


def test_cancelling_a_parent_cancels_its_children(cluster) -> None:
    run = flows.parent_of_sleeper.start(60)
    wait_status(run, RunStatus.SUSPENDED)
    wait_for(lambda: run.children() and run.children()[0].status() == RunStatus.SUSPENDED, 30, poll=0.1,
             what="the child is suspended")
    cancel(run.run_id)
    with pytest.raises(RunCancelled):
        run.result(timeout=30)
    (child,) = run.children()
    wait_status(child, RunStatus.CANCELLED)


def test_continue_as_new_three_times(cluster) -> None:
    run = flows.counter.start(0, 3)
    assert run.result(timeout=90) == 4
    chain = run.chain()
    assert len(chain) == 4 and chain[0] == run
    assert [c.record().status for c in chain] == [RunStatus.CONTINUED] * 3 + [RunStatus.COMPLETED]
    assert {c.status() for c in chain} == {RunStatus.COMPLETED}  # each id reaches the chain's current run
    assert all(len(c.history()) == 1 for c in chain)  # each run's history stays bounded


def test_signals_to_a_chain_reach_its_current_run_and_a_child_chain_its_parent(cluster) -> None:
    run = flows.signal_chain.start([])
    send_signal(run.run_id, "item", 1)
    send_signal(run.run_id, "item", 2)  # pending at the continuation, or sent to the first run after it
    assert run.result(timeout=60) == [1, 2]
    assert run.record().status == RunStatus.CONTINUED and run.record().chain_last == run.chain()[-1].run_id
    parent = flows.parent_of_chain.start(2)
    assert parent.result(timeout=90) == 3
    assert [(e.kind, e.status) for e in parent.history() if e.kind == "child_end"] == [("child_end", "completed")]
