"""Long steps keep their message; a stopping worker hands its running step back at once."""

from __future__ import annotations

import os
import signal
import time
import uuid

import boto3

from tests.e2e import flows


def wait_for(predicate, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_step_longer_than_the_visibility_timeout_runs_once(cluster, spawn, settings) -> None:
    # The "crashy" queue hides a message for 3 s; the step runs 8 s.
    sqs = boto3.client("sqs", region_name=settings.region, endpoint_url=settings.sqs_endpoint)
    url = sqs.create_queue(QueueName=settings.queue_prefix + "crashy")["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "3"})
    worker = spawn("worker", "-Q", "crashy", "-c", "4", env={"WORKFLOWS_VISIBILITY_TIMEOUT": "3"})
    t = uuid.uuid4().hex[:10]
    try:
        run = flows.long_step.start(t, 8.0)
        assert run.result(timeout=60) == "slept"
    finally:
        worker.kill(signal.SIGKILL)
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "20"})
    assert flows.executions(t) == 1


def sigterm_then_takeover(first, spawn, run, tag: str) -> list:  # type: ignore[no-untyped-def]
    """SIGTERM the worker running ``tag``'s step: a second worker runs it again within 10 s
    (not after the 20 s visibility timeout) and the run completes; return its step outcomes."""
    second = spawn("worker", "-Q", "crashy", "-c", "2")
    time.sleep(2)  # the second worker is up and polling
    stopped_at = time.time()
    os.kill(first.pid, signal.SIGTERM)  # warm shutdown
    wait_for(lambda: flows.executions(tag) == 2, 10)
    assert time.time() - stopped_at < 10
    first.kill(signal.SIGKILL)
    try:
        assert run.result(timeout=60) == "slept"
    finally:
        second.kill(signal.SIGKILL)
    return [e for e in run.history() if e.kind == "step" and e.is_outcome]


def test_sigterm_hands_a_running_step_back_promptly(cluster, spawn) -> None:
    first = spawn("worker", "-Q", "crashy", "-c", "2")
    t = uuid.uuid4().hex[:10]
    run = flows.long_step.start(t, 12.0)
    wait_for(lambda: flows.executions(t) == 1, 30)
    # the step's message goes back to SQS at once
    assert len(sigterm_then_takeover(first, spawn, run, t)) == 1


def test_sigterm_sends_a_step_running_in_place_to_another_worker(cluster, spawn) -> None:
    first = spawn("worker", "-Q", "crashy", "-c", "2")
    t = uuid.uuid4().hex[:10]
    run = flows.quick_then_long_step.start(t, 12.0)
    wait_for(lambda: flows.executions(t) == 1, 30)  # the second step runs in the first one's task
    # the step running in place is sent again, as a re-send, at once
    assert len(sigterm_then_takeover(first, spawn, run, t)) == 2
    assert flows.executions(t + "-first") == 1
