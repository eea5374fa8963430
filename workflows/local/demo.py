"""``workflows demo``: an order workflow end to end on an embedded local stack.

One process holds everything (see :mod:`workflows.local.embedded`): the local AWS
emulator (DynamoDB + SQS over HTTP), a Celery worker thread and the beat sweep
thread. No AWS account, no Docker.
"""

from __future__ import annotations

import time
from typing import Any

from workflows.core.model.records import TERMINAL

from ..core.ops.calls import sleep
from ..decorators import step, workflow
from ..errors import WorkflowError

_attempts: dict[str, int] = {}


@step
def reserve(order_id: str, sku: str, qty: int) -> dict[str, Any]:
    """Reserve stock."""
    return {"order_id": order_id, "sku": sku, "qty": qty, "reserved": True}


@step(retries=3, retry_delay=0.5)
def charge(order_id: str, cents: int) -> str:
    """Charge the card; the payment gateway fails the first call to show a retry."""
    _attempts[order_id] = _attempts.get(order_id, 0) + 1
    if _attempts[order_id] == 1:
        raise ConnectionError("payment gateway timed out")
    return f"rcpt-{order_id}-{cents}"


@step
def ship(order_id: str, reservation: dict[str, Any]) -> str:
    """Hand the order to the carrier."""
    return f"track-{order_id}-{reservation['sku']}"


@workflow(name="demo_order")
def demo_order(order_id: str, cents: int, cooling_off: float) -> dict[str, Any]:
    """Reserve, charge (retried once), wait out a cooling-off period durably, ship."""
    reservation = reserve(order_id, "SKU-42", 1)
    receipt = charge(order_id, cents)
    sleep(cooling_off)
    tracking = ship(order_id, reservation)
    return {"receipt": receipt, "tracking": tracking}


def _print_new_events(run: Any, seen: set[int]) -> None:
    for event in run.events():
        if event["seq"] in seen:
            continue
        seen.add(event["seq"])
        name = f" {event['name']}" if event.get("name") else ""
        extra = f"  ({event['error']})" if event.get("error") else ""
        print(f"  {time.strftime('%H:%M:%S')}  {event['type']}{name}{extra}", flush=True)


def run_demo(sleep_seconds: float = 3.0) -> int:
    """Start the embedded stack, run one order, print its steps and result; return 0 on success."""
    from .embedded import embedded_stack

    with embedded_stack():
        from ..settings import get_settings

        print(f"local AWS at {get_settings().dynamodb_endpoint}; tables and queues created", flush=True)
        run = demo_order.options(idempotency_key="demo-o-1").start("o-1", 1999, sleep_seconds)
        print(f"started run {run.run_id} of workflow demo_order", flush=True)
        seen: set[int] = set()
        deadline = time.time() + 60 + sleep_seconds
        while run.record().status not in TERMINAL:
            _print_new_events(run, seen)
            if time.time() > deadline:
                print("the demo did not finish in time", flush=True)
                return 1
            time.sleep(0.2)
        _print_new_events(run, seen)
        try:
            result = run.result(timeout=5)
        except WorkflowError as exc:
            print(f"run ended badly: {exc}", flush=True)
            return 1
        steps = run.steps()
    print(f"result: {result}")
    print("steps: " + ", ".join(f"{s['name']} x{s['attempts']}" for s in steps))
    return 0
