"""Workflows for the fault tests that drive the engine in this process (inline steps only)."""

from __future__ import annotations

from typing import Any

from workflows import WaitTimeout, continue_as_new, hook, step, wait_for_signal, workflow

#: Hook tokens handed out by :func:`publish`, by the key the test chose.
PUBLISHED: dict[str, str] = {}


@step(inline=True)
def publish(key: str, token: str) -> None:
    PUBLISHED[key] = token


@workflow
def await_hook(key: str) -> Any:
    approval = hook("go", timeout=3600)
    publish(key, approval.token)
    return approval.wait()


@workflow
def expiring_hook(key: str) -> str:
    approval = hook("go", timeout=1)
    publish(key, approval.token)
    try:
        return str(approval.wait())
    except WaitTimeout:
        return "timed out"


@workflow
def await_signal() -> Any:
    return wait_for_signal("go")


@workflow
def child_value(x: int) -> int:
    return x


@workflow
def parent_of(x: int) -> int:
    return int(child_value.start(x).result()) + 1


@workflow
def countdown(n: int) -> str:
    if n > 0:
        continue_as_new(n - 1)
    return "done"


@step(retries=2, retry_delay=1.0, backoff=1.0)
def fails_once(key: str) -> str:
    ATTEMPTS[key] = ATTEMPTS.get(key, 0) + 1
    if ATTEMPTS[key] == 1:
        raise RuntimeError("first attempt fails")
    return "done"


ATTEMPTS: dict[str, int] = {}


@workflow
def retried_step(key: str) -> str:
    return fails_once(key)
