"""Long steps keep their message; a stopping worker finishes its running step, once."""

from __future__ import annotations

import os
import signal
import time
import uuid

import boto3
import pytest

from tests.e2e import flows
from tests.waiting import wait_for

pytestmark = pytest.mark.crash


def test_step_longer_than_the_visibility_timeout_runs_once(cluster, spawn, settings) -> None:
    # The "crashy" queue hides a message for 3 s; the step runs 8 s.
    sqs = boto3.client("sqs", region_name=settings.region, endpoint_url=settings.sqs_endpoint)
    url = sqs.create_queue(QueueName=settings.queue_prefix + "crashy")["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "3"})
    worker = spawn("worker", "-Q", "crashy", "-c", "4", env={"WORKFLOWS_VISIBILITY_TIMEOUT": "3"})
    worker.wait_ready()  # else the step's message may wait out the run's lease: recovery sends it again
    t = uuid.uuid4().hex[:10]
    try:
        run = flows.long_step.start(t, 8.0)
        assert run.result(timeout=60) == "slept"
    finally:
        worker.kill(signal.SIGKILL)
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "20"})
    assert flows.executions(t) == 1


def sigterm_during_step(first, spawn, run, tag: str):  # type: ignore[no-untyped-def]
    """SIGTERM ``first`` while ``tag``'s step runs there, with a second worker polling the
    same queue; check that ``first`` exits only after the step ended, with the step run
    once. Return the second worker and the run's result."""
    second = spawn("worker", "-Q", "crashy", "-c", "2")
    second.wait_ready()
    os.kill(first.pid, signal.SIGTERM)  # warm shutdown
    time.sleep(1)  # the time is the test: it must not exit while its step runs
    assert first.popen.poll() is None  # it waits for the running step
    first.popen.wait(timeout=60)
    exited_at = time.time()
    try:
        result = run.result(timeout=60)
    finally:
        second.kill(signal.SIGKILL)
    assert first.popen.returncode == 0, first.output()
    slow = [e for e in run.history() if e.kind == "step" and e.is_outcome and e.name == "slow_once"][-1]
    assert slow.at <= exited_at  # the step ended (and was recorded) before the worker exited
    assert flows.executions(tag) == 1  # no other worker ran it as well
    return second, result


def test_sigterm_lets_a_running_step_finish_once(cluster, spawn) -> None:
    first = spawn("worker", "-Q", "crashy", "-c", "2")
    first.wait_ready()  # else the step's message may wait out the run's lease: recovery sends it again
    t = uuid.uuid4().hex[:10]
    run = flows.long_step.start(t, 8.0)
    wait_for(lambda: flows.executions(t) == 1, 30)
    _, result = sigterm_during_step(first, spawn, run, t)
    assert result == "slept"


def test_sigterm_lets_a_step_running_in_place_finish_once(cluster, spawn) -> None:
    first = spawn("worker", "-Q", "crashy", "-c", "2")
    first.wait_ready()  # else the step's message may wait out the run's lease: recovery sends it again
    t = uuid.uuid4().hex[:10]
    run = flows.quick_then_long_step.start(t, 8.0)
    wait_for(lambda: flows.executions(t) == 1, 30)  # the second step runs in the first one's task
    second, result = sigterm_during_step(first, spawn, run, t)
    assert flows.executions(t + "-first") == 1
    # The stopping worker ran no further step in place: the next one went to the other worker.
    assert result == {"slept": "slept", "pid": second.pid}
