"""Found by the chaos soak (docs/soak.md, "Findings"): a fan-out branch whose message was sent twice.

An SQS send whose response is lost (the connection drops after SQS took the messages) used to be
sent again by botocore's retries: SQS then held two messages with one Celery task id, each a first
delivery of its own, and a worker reads what is recorded before it runs a step only for a message
that may be a repeat. A fan-out branch reads no run item (``core/ops/steps.py:_execute_branch``), so the
second copy ran the branch's body again, seconds after the first copy had recorded its result
(docs/reliability.md: a duplicate message "never runs a recorded step"). Now a send that may have
arrived is sent again marked as a possible repeat and delayed (``workflows/celery/repeats.py``).

Here the front loses the response of the branches' batch send (and holds back the copy's send 5 s,
so that a copy sent at once also arrives after the first copies ran); the test waits until the
worker has taken each copy, then counts the branch bodies.
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.flows import executions
from tests.soak.fronted import finished, start_run, worker_behind
from tests.waiting import wait_for
from workflows import get_run
from workflows.soak.faults import FaultPlan, Request

pytestmark = pytest.mark.e2e


class LoseFirstSend(FaultPlan):
    """While ``on``: applies the first SQS send and loses its response, then holds the send of its
    copy 5 s (so that even a copy sent at once reaches SQS after the first copy has run)."""

    def __init__(self) -> None:
        super().__init__(seed=0, rates={})
        self.on = False
        self.lost: set[str] = set()
        self.copies = 0

    def draw(self, request: Request) -> tuple[str | None, float]:
        if not (self.on and request.operation.startswith("SendMessage")):
            return None, 0.0
        tasks = set(request.task_ids())
        if not self.lost:
            self.lost = tasks
            return "lose", 0.0
        if tasks & self.lost:
            self.copies += 1
            return "latency", 5.0
        return None, 0.0


@pytest.mark.timeout(150)
def test_a_branch_message_sent_twice_runs_its_branch_once(aws_env, settings, spawn, proc_env) -> None:  # type: ignore[no-untyped-def]
    plan = LoseFirstSend()
    with worker_behind(plan, aws_env, settings, spawn, "workflows,steps,dup") as (prefix, worker):
        plan.on = True
        tag = f"dup-{uuid.uuid4().hex[:8]}"
        run_id = start_run(prefix, "duplicated_fan_out", [tag, 2, 0.0])
        wait_for(lambda: get_run(run_id).status() == "completed", 60, poll=0.5, what=f"run {run_id} completed")
        assert plan.lost and plan.copies >= 1, "the lost send was not sent again"
        # the copies may come later (a re-sent copy is delayed 30 s today): wait until each was taken
        wait_for(lambda: all(finished(worker, task) >= 2 for task in plan.lost), 90, poll=1.0,
                 what=f"both copies of tasks {sorted(plan.lost)} taken")
        assert executions(tag) == 2, f"the branches ran {executions(tag)} times"
