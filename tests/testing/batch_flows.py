"""Workflows the batch tests act on (importable: workers load them by name)."""

from __future__ import annotations

from typing import Any

from workflows import FatalError, sleep, step, wait_for_signal, workflow


@step
def batch_add(a: int, b: int) -> int:
    return a + b


@step
def batch_boom(x: int) -> int:
    raise FatalError(f"boom {x}")


@workflow
def batch_waiter(x: int) -> Any:
    """Waits a day for a signal ``go`` (suspended until then)."""
    total = batch_add(x, 1)
    return {"total": total, "got": wait_for_signal("go", timeout="1d")}


@workflow
def batch_quick(x: int) -> int:
    return batch_add(x, 2)


@workflow
def batch_failing(x: int) -> int:
    batch_add(x, 3)
    return batch_boom(x)


@workflow
def batch_sleeper(seconds: float) -> str:
    sleep(seconds)
    return "slept"
