"""Finding of the chaos soak (docs/soak.md, "Findings"): an SQS throttle on a worker's ReceiveMessage.

kombu's asynchronous SQS client turns a 5xx or a timeout of ReceiveMessage into an empty poll, and
``workflows/celery/sqs.py`` copes with that; any other error status raises inside the worker's event
loop. A throttled receive (HTTP 400 ``RequestThrottled``, which botocore's standard retry mode would
retry) therefore either ends that queue's polling loop ("Error in timer": the queue is no longer
consumed, silently) or the worker itself ("Unrecoverable error"). DESIGN.md invariant 12 says
throttling never decides a run's fate; here a few seconds of receive throttles strand every run
that worker would take. The test throttles every ReceiveMessage of one worker for a few seconds,
then asks it to run a workflow.
"""

from __future__ import annotations

import pytest

from tests.soak.fronted import start_run, worker_behind
from tests.waiting import wait_for
from workflows import get_run
from workflows.soak.faults import FaultPlan, Request

pytestmark = pytest.mark.e2e


class ReceiveThrottles(FaultPlan):
    """Throttles every SQS ReceiveMessage while ``on``; passes everything else."""

    def __init__(self) -> None:
        super().__init__(seed=0, rates={})
        self.on = False
        self.throttled = 0

    def draw(self, request: Request) -> tuple[str | None, float]:
        if self.on and request.operation == "ReceiveMessage":
            self.throttled += 1
            return "throttle", 0.0
        return None, 0.0


@pytest.mark.xfail(strict=True, reason="a throttled SQS ReceiveMessage stops the worker's polling "
                                       "(workflows/celery/sqs.py handles only 5xx and timeouts)")
def test_a_worker_keeps_consuming_after_its_receives_were_throttled(aws_env, settings, spawn) -> None:  # type: ignore[no-untyped-def]
    plan = ReceiveThrottles()
    with worker_behind(plan, aws_env, settings, spawn) as prefix:
        plan.on = True
        wait_for(lambda: plan.throttled >= 12, 30, what="a dozen receives throttled")
        plan.on = False
        run_id = start_run(prefix, "sequence", [3])
        wait_for(lambda: get_run(run_id).status() == "completed", 30, poll=0.5, what=f"run {run_id} completed")
