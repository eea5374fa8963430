"""Workflows whose lineage outlives retention: children, continue-as-new chains, signals."""

from __future__ import annotations

from typing import Any

from workflows import continue_as_new, sleep, step, wait_for_signal, workflow


@step
def lineage_double(x: int) -> int:
    return 2 * x


@workflow
def lineage_quick_child(x: int) -> int:
    return lineage_double(x)


@workflow
def lineage_patient_parent(x: int) -> int:
    child = lineage_quick_child.start(x)
    sleep("60d")
    return int(child.result()) + 1


@workflow
def lineage_daily(days: int, total: int = 0) -> int:
    """Continue as new once a day for ``days`` days."""
    sleep("1d")
    if days > 1:
        continue_as_new(days - 1, total + 1)
    return total + 1


@workflow
def lineage_chain_parent(days: int) -> int:
    return int(lineage_daily.start(days).result())


@workflow
def lineage_two_signals() -> list[Any]:
    """Take one signal per run of the chain: two runs, two signals."""
    taken = [wait_for_signal("item", timeout="30d")]
    sleep("1h")
    return taken


@workflow
def lineage_signal_chain(taken: list[Any] | None = None) -> list[Any]:
    """Take one signal, continue as new, until two are taken."""
    taken = [*(taken or []), wait_for_signal("item", timeout="30d")]
    if len(taken) < 2:
        continue_as_new(taken)
    return taken


@workflow
def lineage_daily_then_signal(days: int) -> Any:
    """Continue as new daily for ``days`` days, then wait for a signal."""
    if days > 0:
        sleep("1d")
        continue_as_new(days - 1)
    return wait_for_signal("done", timeout="30d")
