"""The benchmark's workflows; workers import this module (``WORKFLOWS_IMPORTS=bench.flows``)."""

from __future__ import annotations

from workflows import parallel, step, workflow


@step
def add(a: int, b: int) -> int:
    """A dispatched step: one SQS message per call."""
    return a + b


@step(inline=True)
def add_inline(a: int, b: int) -> int:
    """An inline step: runs in the resume task, no broker hop."""
    return a + b


@workflow
def sequence(n: int) -> int:
    """``n`` dispatched steps, one after another."""
    total = 0
    for i in range(n):
        total = add(total, i)
    return total


@workflow
def inline_sequence(n: int) -> int:
    """``n`` inline steps, one after another."""
    total = 0
    for i in range(n):
        total = add_inline(total, i)
    return total


@workflow
def fan_out(n: int) -> list[int]:
    """``n`` dispatched steps in one ``parallel``."""
    return parallel(*(add.s(i, i) for i in range(n)))


@workflow
def single(x: int) -> int:
    """One dispatched step."""
    return add(x, 1)
