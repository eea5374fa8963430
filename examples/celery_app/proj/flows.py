"""Workflows made of the project's existing tasks and of new steps."""

from workflows import parallel, step, workflow

from .tasks import charge_card, notify, reserve_stock, send_receipt

charge = step.from_task(charge_card, retries=2, retry_delay=0.5)
reserve = step.from_task(reserve_stock)
receipt = step.from_task(send_receipt)


@step
def total(reservations: list) -> int:
    """A new step, on the workflows' own step queue."""
    return sum(r["qty"] for r in reservations)


@workflow
def checkout(order_id: str, cents: int) -> dict:
    """Charge, reserve two items in parallel, email the receipt, notify."""
    paid = charge(order_id, cents)
    reservations = parallel(reserve.s("A", 1), reserve.s("B", 2))
    receipt(order_id, paid)
    notify(order_id, f"{total(reservations)} items")
    return {"receipt": paid, "reservations": reservations}
