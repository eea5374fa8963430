"""Async workflows and steps for the async replay tests, importable by name, with sync twins."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from workflows import FatalError, StepFailed, WaitTimeout, hook, parallel, sleep, step, wait_for_signal, workflow
from workflows.core.execution.attempts import current_step

#: How many times each step body ran, by label.
RAN: dict[str, int] = {}
#: Hook tokens handed out by ``async_publish``, by key.
TOKENS: dict[str, str] = {}
#: What a timed-out step saw: "cancelled" once its task was cancelled.
SEEN: list[str] = []
#: Which step the next replay of ``async_switching`` calls (changed by a test).
VARIANT = ["async_fetch"]
#: The threads async step bodies ran on.
THREADS: set[str] = set()

_lock = threading.Lock()


def ran(label: str) -> None:
    with _lock:
        RAN[label] = RAN.get(label, 0) + 1
        THREADS.add(threading.current_thread().name)


@step
async def async_fetch(x: int) -> int:
    await asyncio.sleep(0.001)  # real asyncio inside a step: it runs on the step loop
    ran(f"fetch{x}" if current_step() is not None else f"plain fetch{x}")  # the step's context reaches the loop
    return x * 10


@step
def sync_add(a: int, b: int) -> int:
    ran(f"add{a}+{b}")
    return a + b


@step(inline=True)
async def async_publish(key: str, token: str) -> None:
    TOKENS[key] = token


@step(retries=0)
async def async_refuse(x: int) -> int:
    await asyncio.sleep(0)
    raise FatalError(f"refused {x}")


@step(retries=0, timeout=0.2)
async def async_slow() -> str:
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        SEEN.append("cancelled")
        raise
    return "too late"


@step(inline=True)
def sync_runs_a_loop(x: int) -> int:
    """A sync step that runs asyncio itself (as sync wrappers of async libraries do)."""
    return asyncio.run(_plain_double(x))


async def _plain_double(x: int) -> int:
    await asyncio.sleep(0)
    return 2 * x


@workflow
async def async_calls_loop_running_steps(x: int) -> list[int]:
    direct = sync_runs_a_loop(x)  # a sync step's call in an async workflow
    awaited = await async_fetch(x)
    return [direct, awaited, sync_runs_a_loop(awaited)]


@workflow
async def async_every_op(key: str) -> dict[str, Any]:
    a = await async_fetch(1)
    b = sync_add(a, 1)  # a sync step in an async workflow: a plain call
    await sleep("1h")
    c, d = await asyncio.gather(async_fetch(2), async_fetch(3))
    approval = hook("approve", timeout="1d")
    await async_publish(key, approval.token)
    decision = await approval.wait()
    try:
        signal = await wait_for_signal("go", timeout="2h")
    except WaitTimeout:
        signal = "timed out"
    e = await parallel(sync_add.s(1, 2), async_fetch.s(4))
    child = await async_child.start(b).result()
    return {"a": a, "b": b, "cd": [c, d], "decision": decision, "signal": signal, "e": e, "child": child}


@workflow
def sync_every_op(key: str) -> dict[str, Any]:
    """The sync twin of :func:`async_every_op`: the same ops in the same order."""
    a = async_fetch(1)  # an async step in a sync workflow: its result
    b = sync_add(a, 1)
    sleep("1h")
    c, d = parallel(async_fetch.s(2), async_fetch.s(3), return_exceptions=True)
    approval = hook("approve", timeout="1d")
    async_publish(key, approval.token)
    decision = approval.wait()
    try:
        signal = wait_for_signal("go", timeout="2h")
    except WaitTimeout:
        signal = "timed out"
    e = parallel(sync_add.s(1, 2), async_fetch.s(4))
    child = async_child.start(b).result()
    return {"a": a, "b": b, "cd": [c, d], "decision": decision, "signal": signal, "e": e, "child": child}


@workflow
async def async_child(x: int) -> int:
    return await async_fetch(x)


@workflow
async def async_gather_failure(return_exceptions: bool) -> Any:
    try:
        results = await asyncio.gather(async_fetch(5), async_refuse(6), async_fetch(7),
                                       return_exceptions=return_exceptions)
    except StepFailed as exc:
        return f"failed: {exc}"
    return [r if isinstance(r, int) else type(r).__name__ for r in results]


@workflow
async def async_retried() -> int:
    return await async_fetch(8)


@workflow
async def async_timeout() -> str:
    try:
        return await async_slow()
    except StepFailed as exc:
        return str(exc)


@workflow
async def async_switching() -> int:
    chosen = async_fetch if VARIANT[0] == "async_fetch" else async_refuse
    first = await chosen(1)
    await sleep(60)
    return first


@workflow
async def async_awaits_io() -> None:
    await asyncio.sleep(1)


@workflow
async def async_awaits_bare_yield() -> None:
    await async_fetch(1)
    await asyncio.sleep(0)


async def _helper() -> int:
    return await async_fetch(1)


@workflow
async def async_gathers_coroutines() -> Any:
    return await asyncio.gather(_helper())


@workflow
async def async_forgets_await() -> str:
    async_fetch(1)  # never awaited
    return "done"


@workflow
async def async_nested(n: int) -> list[int]:
    """Durable calls awaited in a plain coroutine of the workflow, and a gather of a repeated call."""
    first = await _helper()
    again = async_fetch(n)
    twice = await asyncio.gather(again, again)
    return [first, *twice]
