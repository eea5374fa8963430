"""Found by the chaos soak (docs/soak.md, "Findings"): an SQS throttle on a worker's ReceiveMessage.

kombu's asynchronous SQS client turns a 5xx or a timeout of ReceiveMessage into an empty poll; any
other error status raised inside the worker's event loop. A throttled receive (HTTP 400
``RequestThrottled``) then ended that queue's polling loop ("Error in timer": the queue was no
longer consumed, silently) or the worker itself ("Unrecoverable error"), stranding the runs that
worker would take (DESIGN.md invariant 12: throttling never decides a run's fate). Now a refused
receive is an empty poll (``workflows/celery/sqs.py``). The test throttles every ReceiveMessage of
one worker for a few seconds, then asks it to run a workflow.
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


def test_a_worker_keeps_consuming_after_its_receives_were_throttled(aws_env, settings, spawn) -> None:  # type: ignore[no-untyped-def]
    plan = ReceiveThrottles()
    with worker_behind(plan, aws_env, settings, spawn) as (prefix, _worker):
        plan.on = True
        wait_for(lambda: plan.throttled >= 6, 30, what="six receives throttled")
        plan.on = False
        run_id = start_run(prefix, "sequence", [3])
        wait_for(lambda: get_run(run_id).status() == "completed", 30, poll=0.5, what=f"run {run_id} completed")
