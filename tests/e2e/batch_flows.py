"""Workflows of the batch operations end-to-end tests (imported by the test workers)."""

from __future__ import annotations

from typing import Any

from workflows import FatalError, step, wait_for_signal, workflow


@step(name="e2e_batch_touch")
def touch(x: int) -> int:
    return x + 1


@step(name="e2e_batch_refuse")
def refuse(x: int) -> int:
    raise FatalError(f"refused {x}")


@workflow(name="e2e_batch_waiter")
def waiter(x: int) -> Any:
    """Waits for the signal ``go`` (suspended until then)."""
    return {"x": touch(x), "got": wait_for_signal("go", timeout="1h")}


@workflow(name="e2e_batch_failing")
def failing(x: int) -> int:
    return refuse(touch(x))
