"""Placing an order: the row is written in a transaction, and its run starts once that transaction commits."""

import uuid

from django.db import transaction

from workflows import RunHandle

from .flows import start_fulfilment
from .models import Order


def place_order(order_id: uuid.UUID | str | None, sku: str, quantity: int,
                cents: int) -> tuple[Order, bool, list[RunHandle]]:
    """Create the order ``order_id`` (a new id when None), or find it if it exists, and start its run
    when the transaction commits. Returns the order, whether it was created, and a list that holds
    the run's handle once the outermost transaction has committed (empty if it rolled back).

    The start is asked for again when the order exists: a client retrying after a lost response
    gets the same run (the idempotency key is the order's), and an order whose start was lost (the
    process died between the commit and the start) gets its run now.
    """
    started: list[RunHandle] = []
    with transaction.atomic():
        order, created = Order.objects.get_or_create(
            id=order_id or uuid.uuid4(), defaults={"sku": sku, "quantity": quantity, "cents": cents})
        transaction.on_commit(lambda: started.append(start_fulfilment(order)))
    return order, created, started
