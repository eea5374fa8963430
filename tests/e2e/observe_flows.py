"""Workflows of the observability tests (workers import them by name)."""

from __future__ import annotations

from workflows import sleep, workflow
from workflows.decorators import step

from .flows import bump


@step
def observed_add(a: int, b: int) -> int:
    return a + b


@step(retries=2, retry_delay=0.2, backoff=1.0)
def observed_flaky(tag: str) -> int:
    if bump(f"observed-{tag}") == 1:
        raise RuntimeError("the first attempt fails")
    return 10


@workflow
def observed(tag: str) -> int:
    total = observed_add(1, 2)
    total += observed_flaky(tag)
    sleep(0.5)
    return total
