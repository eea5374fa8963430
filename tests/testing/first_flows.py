"""Workflows of the first-of tests: races of signals, timers, hooks, steps and children."""

from __future__ import annotations

from typing import Any

import workflows
from workflows import (
    FatalError,
    StepFailed,
    WaitTimeout,
    first_of,
    hook,
    signal,
    sleep,
    step,
    timer,
    wait_for_signal,
    workflow,
)
from workflows.errors import ChildFailed

#: What each replay of ``race_recorded`` saw (tests reset it).
SEEN: list[Any] = []


@step
def first_double(x: int) -> int:
    return 2 * x


@step(retries=0)
def first_boom() -> None:
    raise FatalError("boom")


def _won(won: workflows.First) -> dict[str, Any]:
    return {"key": won.key, "index": won.index, "kind": won.kind, "value": won.value}


@workflow
def race_signal_timer() -> dict[str, Any]:
    return _won(first_of(go=signal("go"), late=timer("1h")))


@workflow
def race_step(seconds: float) -> dict[str, Any]:
    return _won(first_of(signal("go"), timer(seconds), first_double.s(21)))


@workflow
def race_after_sleep() -> dict[str, Any]:
    """A signal sent during the sleep is pending when the race begins: it wins, the step is never sent."""
    sleep("1m")
    return _won(first_of(first_double.s(1), signal("go")))


@workflow
def race_then_wait() -> list[Any]:
    """The timer wins; the signal that comes later stays pending for the next wait."""
    won = first_of(signal("go"), timer("1h"))
    return [won.kind, wait_for_signal("go")]


@workflow
def race_hook() -> dict[str, Any]:
    approval = hook("approve")
    won = first_of(approve=approval, late=timer("1d"))
    if won.kind == "timer":
        return {**_won(won), "later": approval.wait()}  # the hook stays pending for a later wait
    return _won(won)


@workflow
def race_child_double(x: int) -> int:
    return first_double(x)


@workflow
def race_child_fails() -> None:
    first_boom()


@workflow
def race_child(fail: bool) -> Any:
    child = (race_child_fails.start() if fail else race_child_double.start(4))
    try:
        won = first_of(child, timer("1d"))
    except ChildFailed as exc:
        return f"child {exc.status}"
    return _won(won)


@workflow
def race_step_fails() -> str:
    try:
        first_of(first_boom.s(), timer("1h"))
    except StepFailed as exc:
        return f"step failed: {exc.error}"
    return "no"


@workflow
def race_hook_expires() -> str:
    try:
        first_of(hook("approve", timeout="1m"), signal("never"))
    except WaitTimeout as exc:
        return str(exc)
    return "no"


@workflow
def race_recorded() -> list[Any]:
    """Two races, each replayed after the next sleep: the recorded winner is read, never raced again."""
    first = first_of(signal("go"), timer("10m"))
    SEEN.append(first.kind)
    sleep("1h")
    second = first_of(signal("go"), timer("10m"))
    SEEN.append(second.kind)
    sleep("1h")
    return [first.kind, second.kind, second.value]


@workflow
async def race_async() -> dict[str, Any]:
    won = await first_of(signal("go"), timer("1h"))
    doubled = first_double(3)  # a sync step: its value at once
    return {**_won(won), "doubled": doubled}
