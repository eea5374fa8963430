"""An expense that waits (durably, for days if need be) for a person to approve it.

The workflow creates a hook, hands its secret token to the approver in a step,
then suspends until someone resumes the hook over HTTP, the CLI or Python, or
until the hook's timeout passes. Run ``python -m examples.approval`` for the
steps to try it on the local stack.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

from pydantic import BaseModel

from workflows import WaitTimeout, hook, step, workflow

log = logging.getLogger(__name__)

BASE_URL = os.environ.get("APPROVAL_BASE_URL", "http://127.0.0.1:8000")


class Decision(BaseModel):
    """What the approver sends back; other payloads are refused with 422."""

    approved: bool
    by: str
    comment: str = ""


@step(retries=5, retry_delay=2.0)
def notify_approver(approver: str, expense_id: str, cents: int, token: str) -> dict[str, str]:
    """Send the approver a link that resumes the hook.

    A real step would email or message it and return only a message id. This
    demo has no mail server: it logs the link and returns it, so
    ``python -m examples.approval start`` can print it for you.
    """
    link = f"{BASE_URL}/hooks/{token}"
    log.info("asking %s to approve expense %s (%d cents)", approver, expense_id, cents)
    return {"to": approver, "link": link}


@step
def book_expense(expense_id: str, decision: dict[str, Any]) -> str:
    """Record the outcome (a real step would update the ledger)."""
    verdict = "approved" if decision["approved"] else "rejected"
    return f"expense {expense_id} {verdict} by {decision['by']}"


@workflow(max_duration="8d")
def expense_approval(expense_id: str, cents: int, approver: str, timeout: str = "7d") -> str:
    """Ask ``approver`` to decide on an expense; reject it if nobody answers in ``timeout``."""
    approval = hook("approve", timeout=timeout, schema=Decision)
    notify_approver(approver, expense_id, cents, approval.token)
    try:
        decision = approval.wait()
    except WaitTimeout:
        decision = {"approved": False, "by": "timeout"}
    return book_expense(expense_id, decision)


HOW_TO = """\
Try it on the local stack (five terminals, all in the repository root):

  1. workflows local-aws                      # prints the AWS_* variables to export
     Export them in every other terminal, plus:
       export WORKFLOWS_IMPORTS=examples.approval PYTHONPATH=. WORKFLOWS_SWEEP_INTERVAL=1
       export WORKFLOWS_HOOK_SECRET=local-only-hook-secret-change-me-0123456789  # same value everywhere
  2. workflows init-aws && workflows worker
  3. workflows beat                           # fires hook timeouts
  4. uvicorn workflows.http:app --port 8000   # POST /hooks/{token}
  5. python -m examples.approval start        # starts a run, prints the approval link

Then approve (or send {"approved": "maybe"} to see a 422, or the same request twice for a 409):

  curl -i -X POST LINK -H 'content-type: application/json' -d '{"approved": true, "by": "ana"}'

or from the command line:  workflows hooks resume TOKEN --data '{"approved": true, "by": "ana"}'
Start with  python -m examples.approval start 30s  to watch a hook expire instead.

Or on the Docker Compose stack (docker-compose.yml; its hook endpoint is published on the
port the link names, 127.0.0.1:8000 unless HOOKS_PORT says otherwise):

  docker compose up -d
  docker compose run --rm --entrypoint python cli -m examples.approval start
"""


def _start(timeout: str) -> int:
    run = expense_approval.start("exp-42", 1250, "ana@example.com", timeout)
    print(f"started run {run.run_id}; waiting for the approver to be notified...")
    for _ in range(300):
        sent = [s for s in run.steps() if s["name"] == "notify_approver" and s["status"] == "completed"]
        if sent:
            print(f"approval link (a secret, single use): {sent[0]['result']['link']}")
            print(f"waiting for the decision (hook timeout {timeout}); Ctrl-C to stop waiting")
            print(run.result())
            return 0
        time.sleep(0.2)
    print("the notify step did not run: are the worker and WORKFLOWS_IMPORTS set up?", file=sys.stderr)
    return 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["start"]:
        sys.exit(_start(sys.argv[2] if len(sys.argv) > 2 else "7d"))
    print(HOW_TO)
