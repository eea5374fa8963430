"""Waiting in tests: on a condition, never for a fixed time (issue 25).

A test that waits for something (a worker to be ready, a run to end, a letter to arrive)
polls the condition through :func:`wait_for`, which returns as soon as it holds and fails
with a message naming what did not happen. ``time.sleep(n)`` stays only where the time
itself is the test (a schedule left to fire for a while, a hook left to expire).
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 30.0, *, poll: float = 0.05, what: str = "") -> T:
    """Poll ``condition`` until it returns a truthy value, and return that value.

    Args:
        condition: called every ``poll`` seconds; exceptions propagate.
        timeout: seconds before giving up.
        poll: seconds between calls.
        what: what is awaited, for the failure message.

    Raises:
        AssertionError: the condition did not hold within ``timeout`` (its last value is shown).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not reached in {timeout:g} s: {what or getattr(condition, '__name__', 'condition')}"
                                 f" (last value {value!r})")
        time.sleep(poll)


def holds_within(condition: Callable[[], object], timeout: float, *, poll: float = 0.25) -> bool:
    """Whether ``condition`` becomes truthy within ``timeout`` seconds (for asserting it does not)."""
    try:
        wait_for(condition, timeout, poll=poll)
        return True
    except AssertionError:
        return False
