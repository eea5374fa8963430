"""Workflows of the first-of tests: races of signals, timers, hooks, steps and children."""

from __future__ import annotations

import asyncio
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


@step
async def first_async_double(x: int) -> int:
    return 2 * x


@workflow
async def race_asyncio_wait() -> dict[str, Any]:
    """asyncio.wait(FIRST_COMPLETED) of a signal wait and a sleep: one first_of op."""
    go, nap = wait_for_signal("go"), sleep("1h")
    done, pending = await asyncio.wait({go, nap}, return_when=asyncio.FIRST_COMPLETED)
    return {"winner": "signal" if go in done else "sleep", "value": go.result() if go in done else None,
            "pending": len(pending)}


@workflow
async def race_asyncio_wait_timeout() -> list[Any]:
    """asyncio.wait of a step call and a signal wait with a timeout: the step wins."""
    step_call, go = first_async_double(5), wait_for_signal("go")
    done, _ = await asyncio.wait([step_call, go], timeout=3600, return_when=asyncio.FIRST_COMPLETED)
    return [step_call in done, step_call.result(), go in done]


@workflow
async def race_wait_for(seconds: float) -> str:
    """asyncio.wait_for of a signal wait: the signal, or TimeoutError after ``seconds`` (durably)."""
    try:
        value = await asyncio.wait_for(wait_for_signal("go"), timeout=seconds)
    except asyncio.TimeoutError:
        return "timed out"
    return f"got {value}"


@workflow
def race_step_then_wait(seconds: float) -> dict[str, Any]:
    """A step raced against a short timer; then a long wait, during which the losing step may end."""
    won = _won(first_of(first_double.s(21), timer(seconds)))
    return {"won": won, "then": wait_for_signal("done")}
