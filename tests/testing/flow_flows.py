"""Workflows of the flow-control tests: steps limited by concurrency and rate."""

from __future__ import annotations

import asyncio
import threading

from workflows import parallel, step, workflow
from workflows.core.execution.attempts import current_step

#: (label, virtual time) of every start of a limited step body (tests clear it).
STARTS: list[tuple[str, float]] = []


def started(label: str) -> None:
    info = current_step()
    assert info is not None
    STARTS.append((label, info.engine.now()))


@step(concurrency=1, concurrency_key="customer")
def flow_one_per_customer(customer: str, n: int) -> str:
    started(customer)
    return f"{customer}-{n}"


@step(rate="2/s")
def flow_two_per_second(n: int) -> int:
    started("rate")
    return n


@step(rate="1/s", rate_key="tenant", burst=2)
def flow_per_tenant(tenant: str, n: int) -> str:
    started(tenant)
    return tenant


@workflow
def flow_customer_job(customer: str) -> str:
    return flow_one_per_customer(customer, 1)


@workflow
def flow_rated_chain(count: int) -> list[int]:
    return [flow_two_per_second(n) for n in range(count)]


@workflow
def flow_rated_fan_out(count: int) -> list[int]:
    return parallel(*(flow_two_per_second.s(n) for n in range(count)))


@workflow
def flow_tenants(count: int) -> list[str]:
    return parallel(*(flow_per_tenant.s(t, n) for n in range(count) for t in ("a", "b")))


@step(concurrency=1, rate="1/s")
def flow_both(n: int) -> int:
    started("both")
    return n


@step(concurrency=1, concurrency_key="customer", rate="100/s", rate_key="customer")
def flow_large_per_customer(customer: str, document: str) -> int:
    started(customer)
    return len(document)


@workflow
def flow_large_customer_job(customer: str, document: str) -> int:
    return flow_large_per_customer(customer, document)


#: Set by the overrun tests to let a timed-out body return.
BODY_MAY_RETURN = threading.Event()
#: Set by a body once it has returned.
BODY_RETURNED = threading.Event()


@step(concurrency=1, timeout=0.05, retries=1)
def flow_overrun_sync(n: int) -> int:
    BODY_MAY_RETURN.wait(30)
    BODY_RETURNED.set()
    return n


@step(concurrency=1, timeout=0.05, retries=1)
async def flow_overrun_async(n: int) -> int:
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:  # a body that ignores its cancel, and runs on
        await asyncio.to_thread(BODY_MAY_RETURN.wait, 30)
    BODY_RETURNED.set()
    return n


#: Bodies of ``kit_slot_overrunning`` inside at once, now and at most (tests reset it).
OVERRUN = {"inside": 0, "peak": 0}
_overrun_lock = threading.Lock()


@step(concurrency=1, timeout=0.2, retries=2, retry_delay=1)
def kit_slot_overrunning(n: int) -> int:
    """Times out at 0.2 s of real time and runs on for 0.6 s: it keeps its slot until it returns."""
    with _overrun_lock:
        OVERRUN["inside"] += 1
        OVERRUN["peak"] = max(OVERRUN["peak"], OVERRUN["inside"])
    try:
        threading.Event().wait(0.6)
    finally:
        with _overrun_lock:
            OVERRUN["inside"] -= 1
    return n


@workflow
def kit_slot_overrun_job(n: int) -> str:
    try:
        return str(kit_slot_overrunning(n))
    except Exception as exc:  # noqa: BLE001 - every attempt times out: the run reports it
        return type(exc).__name__
