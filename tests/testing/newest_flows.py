"""Workflows of the newest-first listing tests: one that waits, one that completes, one that fails."""

from __future__ import annotations

from workflows import wait_for_signal, workflow


@workflow(name="newest_waits")
def waits() -> str:
    return str(wait_for_signal("go"))


@workflow(name="newest_completes")
def completes(n: int) -> int:
    return n


@workflow(name="newest_fails")
def fails() -> None:
    raise ValueError("no")
