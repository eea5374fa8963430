"""Workflows of the payload, retry-count and hook-token tests (driven in-process)."""

from __future__ import annotations

from typing import Any

from workflows import hook, step, wait_for_signal, workflow
from workflows.core.execution.attempts import current_step


@step(retries=1200, retry_delay=0, jitter=0, inline=True)
def fails_until(last_failure: int) -> int:
    """Fail every attempt up to ``last_failure``; return the attempt that succeeded."""
    info = current_step()
    assert info is not None
    if info.attempt <= last_failure:
        raise RuntimeError(f"attempt {info.attempt} fails")
    return info.attempt


@workflow
def many_retries(last_failure: int) -> int:
    return fails_until(last_failure)


#: The token each replay of a run handed to the workflow (a side channel for the tests only).
SEEN_TOKENS: dict[str, list[str]] = {}


@workflow
def guarded_approval() -> Any:
    h = hook("approve", timeout=600)
    SEEN_TOKENS.setdefault(h.ctx.run.run_id, []).append(h.token)
    return h.wait()


@workflow
def shout(text: str) -> str:
    return text.upper()


@workflow
def signal_count() -> int:
    return len(wait_for_signal("items"))


@step(retries=2, retry_delay=0, jitter=0)
def count_after_a_failure(items: list[str]) -> int:
    info = current_step()
    if info is not None and info.attempt == 1:
        raise RuntimeError("the first attempt fails")
    return len(items)


@workflow
def retried_count(n: int) -> int:
    return count_after_a_failure([""] * n)
