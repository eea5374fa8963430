"""The fulfilment workflow of an order. Its steps use the ORM; the workflow itself only calls them.

A step may run again (a worker lost mid-step, a redelivered message), so each one is
written to be harmless the second time: it sets the order's fields rather than adding to them.
"""

from workflows import RunHandle, step, workflow

from .models import Order


@step(retries=3, retry_delay=0.5)
def charge_order(order_id: str) -> str:
    """Charge the order (here: make a receipt) and mark it paid."""
    order = Order.objects.get(pk=order_id)
    receipt = f"rcpt-{order.id.hex[:8]}-{order.cents}"
    Order.objects.filter(pk=order_id, status=Order.Status.NEW).update(status=Order.Status.PAID, receipt=receipt)
    return receipt


@step(retries=3, retry_delay=0.5)
def ship_order(order_id: str) -> str:
    """Ship a paid order; returns its status."""
    Order.objects.filter(pk=order_id, status=Order.Status.PAID).update(status=Order.Status.SHIPPED)
    return Order.objects.values_list("status", flat=True).get(pk=order_id)


@workflow
def fulfil_order(order_id: str) -> dict:
    receipt = charge_order(order_id)
    status = ship_order(order_id)
    return {"order": order_id, "receipt": receipt, "status": status}


def start_fulfilment(order: Order) -> RunHandle:
    """Start the order's run: once per order, however often this is called (the key is the order's id)."""
    return fulfil_order.options(idempotency_key=f"order-{order.id}", tags={"order": str(order.id)}).start(str(order.id))
