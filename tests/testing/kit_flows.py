"""Workflows the testing-kit tests run (importable by name, as workers load them)."""

from __future__ import annotations

from typing import Any

from workflows import (
    RetryableError,
    WaitTimeout,
    continue_as_new,
    hook,
    parallel,
    sleep,
    step,
    wait_for_signal,
    workflow,
)

#: How many times each step body ran, by label (tests reset it).
CALLS: dict[str, int] = {}


def ran(label: str) -> None:
    CALLS[label] = CALLS.get(label, 0) + 1


@step
def kit_note(text: str) -> str:
    ran(f"note:{text}")
    return text


@workflow
def kit_long_sleep(days: int) -> str:
    kit_note("before")
    sleep(f"{days}d")
    return kit_note("after")


@step(inline=True)
def kit_publish(token: str) -> None:
    """A real step would mail the token; the kit finds the hook by name instead."""


@workflow
def kit_approval(timeout: str) -> Any:
    approval = hook("approve", timeout=timeout)
    kit_publish(approval.token)
    try:
        return approval.wait()
    except WaitTimeout:
        return "expired"


@step(retries=3, retry_delay=60, backoff=2.0, jitter=0.0)
def kit_charge(cents: int) -> str:
    ran("charge")
    return f"charged {cents}"


@step(retries=2, retry_delay=1, jitter=0.0, inline=True)
def kit_inline_charge(cents: int) -> str:
    ran("inline_charge")
    return f"charged {cents}"


@workflow
def kit_pay(cents: int, inline: bool) -> str:
    return kit_inline_charge(cents) if inline else kit_charge(cents)


@step
def kit_busy_gateway() -> str:
    ran("busy")
    if CALLS["busy"] == 1:
        raise RetryableError("busy", retry_after=3600)
    return "ok"


@workflow
def kit_gateway() -> str:
    return kit_busy_gateway()


@workflow
def kit_cart() -> dict[str, Any]:
    items: list[str] = []
    while True:
        try:
            event = wait_for_signal("cart", timeout="1h")
        except WaitTimeout:
            return {"items": items, "closed_by": "timeout"}
        if event == "checkout":
            return {"items": items, "closed_by": "checkout"}
        items.append(event)


@workflow
def kit_wait_forever() -> None:
    sleep("365d")


@step
def kit_square(x: int) -> int:
    return x * x


@workflow
def kit_fan(n: int) -> list[int]:
    return parallel(*(kit_square.s(i) for i in range(n)))


@workflow
def kit_child(x: int) -> int:
    sleep("1h")
    return kit_square(x)


@workflow
def kit_parent(xs: list[int]) -> int:
    children = [kit_child.start(x) for x in xs]
    return sum(child.result() for child in children)


@workflow
def kit_daily_report(label: str) -> str:
    return kit_note(label)


@workflow
def kit_countdown(n: int) -> int:
    kit_note(f"count{n}")
    if n > 0:
        continue_as_new(n - 1)
    return n


class WorkerDied(BaseException):
    """Stands for the death of the worker process running a step (tests catch it at delivery)."""


#: While True, ``kit_deadly`` kills its worker every time.
DEADLY = [False]


@step(inline=True)
def kit_deadly() -> str:
    ran("deadly")
    if DEADLY[0]:
        raise WorkerDied("the step's worker died")
    return "survived"


@workflow
def kit_crash_loop() -> str:
    return kit_deadly()


@workflow
def kit_echo(text: str) -> str:
    return kit_note(text)
