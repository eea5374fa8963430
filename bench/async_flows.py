"""The workflows ``python -m bench.async_steps`` runs: a fan-out of steps that wait on I/O."""

from __future__ import annotations

import asyncio
import time

from workflows import parallel, step, workflow


@step(retries=0)
async def bench_async_nap(seconds: float) -> None:
    await asyncio.sleep(seconds)  # stands for an awaited HTTP call or query


@step(retries=0)
def bench_sync_nap(seconds: float) -> None:
    time.sleep(seconds)


@workflow
async def bench_async_fan(n: int, seconds: float) -> int:
    await asyncio.gather(*(bench_async_nap(seconds) for _ in range(n)))
    return n


@workflow
def bench_sync_fan(n: int, seconds: float) -> int:
    parallel(*(bench_sync_nap.s(seconds) for _ in range(n)))
    return n
