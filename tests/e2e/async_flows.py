"""Async workflows and steps for the end-to-end tests (imported by the session's workers)."""

from __future__ import annotations

import asyncio
import threading

from workflows import sleep, step, workflow


@step
async def async_e2e_double(x: int) -> dict[str, object]:
    await asyncio.sleep(0.01)
    return {"value": 2 * x, "thread": threading.current_thread().name}


@step(inline=True)
async def async_e2e_inc(x: int) -> int:
    await asyncio.sleep(0)
    return x + 1


@step
def sync_e2e_square(x: int) -> int:
    return x * x


@workflow
async def async_e2e_order(n: int) -> dict[str, object]:
    first = await async_e2e_double(n)
    bumped = await async_e2e_inc(int(first["value"]))  # type: ignore[call-overload]
    squared = sync_e2e_square(bumped)  # a sync step in an async workflow
    await sleep(1)
    fan = await asyncio.gather(*(async_e2e_double(i) for i in range(3)))
    return {"bumped": bumped, "squared": squared, "fan": [f["value"] for f in fan],
            "threads": sorted({str(first["thread"]), *(str(f["thread"]) for f in fan)})}
