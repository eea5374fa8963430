"""``workflows demo``: an order workflow end to end on an embedded local stack.

One process holds everything: the local AWS emulator (DynamoDB + SQS over
HTTP), a Celery worker thread and the beat sweep thread. No AWS account, no Docker.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

from .decorators import step, workflow
from .ops import sleep

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
    from .localstack import LocalAWS

    with LocalAWS() as aws:
        session = uuid.uuid4().hex[:6]
        os.environ.update(aws.environ())
        os.environ.update({"WORKFLOWS_TABLE_PREFIX": f"demo{session}-", "WORKFLOWS_QUEUE_PREFIX": f"demo{session}-",
                           "WORKFLOWS_SWEEP_INTERVAL": "0.25", "WORKFLOWS_POLL_WAIT_SECONDS": "1"})
        from .settings import Settings, configure

        configure(Settings.from_env())
        return _run(sleep_seconds)


def _run(sleep_seconds: float) -> int:
    from celery.contrib.testing.worker import start_worker

    from beat.scheduler import tick_once
    from persistence.provision import create_queues, create_tables

    from .app import app, worker_queues
    from .settings import get_settings

    settings = get_settings()
    print(f"local AWS at {settings.dynamodb_endpoint}; creating tables and queues", flush=True)
    create_tables(settings)
    create_queues(settings, worker_queues())
    stop = threading.Event()

    def sweep() -> None:
        while not stop.wait(settings.sweep_interval):
            tick_once()

    sweeper = threading.Thread(target=sweep, name="beat-sweep", daemon=True)
    with start_worker(app, pool="threads", concurrency=4, perform_ping_check=False, loglevel="WARNING",
                      queues=worker_queues(), shutdown_timeout=10):
        sweeper.start()
        run = demo_order.start("o-1", 1999, sleep_seconds, idempotency_key="demo-o-1")
        print(f"started run {run.run_id} of workflow demo_order", flush=True)
        seen: set[int] = set()
        deadline = time.time() + 60 + sleep_seconds
        while run.record().status not in ("completed", "failed", "cancelled", "timed_out"):
            _print_new_events(run, seen)
            if time.time() > deadline:
                print("the demo did not finish in time", flush=True)
                return 1
            time.sleep(0.2)
        _print_new_events(run, seen)
        stop.set()
        try:
            result = run.result(timeout=5)
        except Exception as exc:
            print(f"run ended badly: {exc}", flush=True)
            return 1
        steps = run.steps()
    print(f"result: {result}")
    print("steps: " + ", ".join(f"{s['name']} x{s['attempts']}" for s in steps))
    return 0
