"""Workflows of the delayed start and child policy end-to-end tests (imported by the test workers)."""

from __future__ import annotations

from workflows import now, sleep, step, workflow


@step(name="e2e_delay_greet")
def greet(name: str) -> str:
    return f"hello {name}"


@workflow(name="e2e_delay_greeting")
def greeting(name: str) -> dict[str, object]:
    """Greets, and says when it began (a deterministic value, taken once)."""
    return {"text": greet(name), "began": now().timestamp()}


@workflow(name="e2e_delay_sleeper")
def sleeper(seconds: float) -> str:
    sleep(seconds)
    return "woke"


@workflow(name="e2e_delay_parent")
def parent() -> dict[str, str]:
    """One child of each kind, each asleep for a minute; the parent waits a moment and ends."""
    children = {policy: sleeper.options(parent_close_policy=policy).start(60).run_id
                for policy in ("cancel", "request_cancel", "abandon")}
    children["detached"] = sleeper.options(detached=True).start(2).run_id
    children["default"] = sleeper.start(60).run_id
    sleep(1)
    return children
