"""Workflows of the payload-expiry tests: large payloads that live longer than the bucket's old day count."""

from __future__ import annotations

from typing import Any

from workflows import continue_as_new, sleep, step, wait_for_signal, workflow

#: How many times each step body ran, by label (tests reset it).
CALLS: dict[str, int] = {}


@step
def expiry_grow(blob: str) -> str:
    """A large result (the argument doubled)."""
    CALLS["expiry_grow"] = CALLS.get("expiry_grow", 0) + 1
    return blob + blob


@workflow
def expiry_grow_then_sleep(blob: str, days: int) -> int:
    """A step with a large result, then a long sleep, then the result read again."""
    grown = expiry_grow(blob)
    sleep(f"{days}d")
    return len(grown) + len(blob)


@step
def expiry_first_time() -> bool:
    """True the first time it runs (in any run), then False."""
    CALLS["expiry_first_time"] = CALLS.get("expiry_first_time", 0) + 1
    return CALLS["expiry_first_time"] == 1


@workflow
def expiry_sleepy_chain(blob: str) -> int:
    """Sleep 50 days, then (the first time) go on as a new run with the very same large arguments."""
    sleep("50d")
    if expiry_first_time():
        continue_as_new(blob)
    return len(blob)


@workflow
def expiry_parent_of_grower(blob: str) -> Any:
    """A child run that returns a large result, then a long sleep, then that result read again."""
    child = expiry_grow_then_sleep.start(blob, 1)
    result = child.result()
    sleep("100d")
    return result


@workflow
def expiry_slow_grower(blob: str) -> str:
    """Sleep 10 days, then return a large result."""
    sleep("10d")
    return expiry_grow(blob)


@workflow
def expiry_leaves_a_grower(blob: str) -> str:
    """Start a child that returns a large result in 10 days, leave it running, and end."""
    return expiry_slow_grower.options(parent_close_policy="abandon").start(blob).run_id


@workflow
def expiry_wait_then_live_on(blob: str) -> int:
    """A wait with a year-long timeout that a signal ends early, then a step, then a wait with no deadline."""
    wait_for_signal("early", timeout="365d")
    grown = expiry_grow(blob)
    wait_for_signal("later")
    return len(grown)
