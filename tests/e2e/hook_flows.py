"""Hook workflows for the end-to-end tests; workers import this module by name (WORKFLOWS_IMPORTS)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tests.waiting import wait_for
from workflows import RunHandle, WaitTimeout, hook, step, workflow


class Decision(BaseModel):
    """The payload schema of :func:`typed_approval`."""

    approved: bool
    by: str


@step
def publish_token(token: str) -> str:
    """Hand the token to the outside world: the test reads it from this step's result."""
    return token


@workflow
def approval(timeout: float = 60) -> Any:
    h = hook("approve", timeout=timeout)
    publish_token(h.token)
    return h.wait()


@workflow
def typed_approval() -> Any:
    h = hook("approve", timeout=60, schema=Decision)
    publish_token(h.token)
    return h.wait()


@workflow
def short_approval(timeout: float) -> Any:
    h = hook("approve", timeout=timeout)
    publish_token(h.token)
    try:
        return h.wait()
    except WaitTimeout:
        return "timed out"


def published_token(run: RunHandle, timeout: float = 30) -> str:
    """Wait until ``run``'s ``publish_token`` step has completed; return the token it published."""
    def token() -> str | None:
        return next((str(row["result"]) for row in run.steps()
                     if row["name"] == "publish_token" and row["status"] == "completed"), None)

    return str(wait_for(token, timeout, poll=0.1, what=f"run {run.run_id} publishes its token"))
