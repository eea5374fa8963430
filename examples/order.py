"""An order: a retried payment, a parallel stock reservation, a durable cooling-off sleep.

Run it on the embedded local stack (no AWS account):  python -m examples.order
"""

from __future__ import annotations

from workflows import RetryableError, parallel, sleep, step, workflow

_calls: dict[str, int] = {}


@step(retries=5, retry_delay=0.2, backoff=2.0, max_delay=5)
def charge(order_id: str, cents: int) -> str:
    """Charge the card; the gateway asks us to come back once."""
    _calls[order_id] = _calls.get(order_id, 0) + 1
    if _calls[order_id] == 1:
        raise RetryableError("gateway busy", retry_after=0.5)
    return f"rcpt-{order_id}-{cents}"


@step
def reserve(warehouse: str, sku: str, qty: int) -> dict:
    """Reserve stock in one warehouse."""
    return {"warehouse": warehouse, "sku": sku, "qty": qty}


@step
def ship(order_id: str, reservations: list) -> str:
    """Ship from the reserving warehouses."""
    return f"shipped {order_id} from {', '.join(r['warehouse'] for r in reservations)}"


@workflow(max_duration="1d")
def order(order_id: str, cents: int) -> dict:
    """Charge, reserve in two warehouses at once, wait a cooling-off second, ship."""
    receipt = charge(order_id, cents)
    reservations = parallel(reserve.s("east", "SKU-1", 1), reserve.s("west", "SKU-2", 2))
    sleep("1s")
    return {"receipt": receipt, "shipment": ship(order_id, reservations)}


if __name__ == "__main__":
    from workflows.local.embedded import embedded_stack

    with embedded_stack():
        run = order.options(idempotency_key="o-7").start("o-7", 4200)
        print(run.result(timeout=60))
        for row in run.steps():
            print(f"  step {row['seq']} {row['name']}: {row['status']} after {row['attempts']} attempt(s)")
