"""Workflows of the replay robustness tests (store errors, inline leases, swallowed suspensions)."""

from __future__ import annotations

from typing import Any, Callable

from workflows import hook, parallel, step, wait_for_signal, workflow

#: Called by :func:`tick` with its argument; tests set it to move a fake clock and the like.
on_tick: Callable[[int], None] = lambda i: None  # noqa: E731
#: How many times :func:`tick` ran, by argument.
ticks: dict[int, int] = {}


@step
def robust_add(a: int, b: int) -> int:
    return a + b


@step(inline=True, retries=0)
def tick(i: int) -> int:
    ticks[i] = ticks.get(i, 0) + 1
    on_tick(i)
    return i


@workflow
def inline_ticks(n: int) -> int:
    for i in range(n):
        tick(i)
    return n


@workflow
def signal_echo() -> Any:
    return wait_for_signal("go")


@workflow
def signal_guarded() -> Any:
    try:
        return wait_for_signal("go")
    except BaseException:  # wrong, but it must not hide a store failure
        return "swallowed"


@workflow
def hook_echo() -> Any:
    return hook("approval").wait()


@workflow
def fan_in() -> list[int]:
    return parallel(robust_add.s(1, 2), robust_add.s(3, 4))


@workflow
def child_echo(x: int) -> int:
    return x


@workflow
def child_parent(x: int) -> int:
    return child_echo.start(x).result()


@workflow
def swallows_with_except_base() -> int:
    try:
        robust_add(1, 2)
    except BaseException:
        pass
    return 1


@workflow
def swallows_with_bare_except() -> int:
    try:
        robust_add(1, 2)
    except:  # noqa: E722 - the mistake under test
        pass
    return 1


@workflow
def swallows_then_raises() -> int:
    try:
        robust_add(1, 2)
    except BaseException:
        raise ValueError("something else") from None
    return 1


@workflow
def swallows_then_calls_again() -> int:
    try:
        robust_add(1, 2)
    except BaseException:
        pass
    return robust_add(3, 4)
