"""The project's existing tasks. Some are used as workflow steps (proj/flows.py) unchanged."""

from workflows import step

from . import outbox
from .celery import app


@app.task
def charge_card(order_id: str, cents: int) -> str:
    """Charge a card (routed to the ``payments`` queue by ``task_routes``).

    Its first call for an order whose id ends in ``-flaky`` fails, to show a step's retries.
    """
    if order_id.endswith("-flaky") and outbox.count(f"charge-{order_id}") == 1:
        raise ConnectionError("card processor timed out")
    return f"rcpt-{order_id}-{cents}"


@app.task(bind=True)
def reserve_stock(self, sku: str, qty: int) -> dict:  # type: ignore[no-untyped-def]
    """Reserve stock (a bound task, on the default queue)."""
    return {"sku": sku, "qty": qty, "task": self.name}


@app.task
def send_receipt(order_id: str, receipt: str) -> str:
    """Email a receipt (routed to the ``emails`` queue)."""
    outbox.write(f"receipt-{order_id}", receipt)
    return receipt


@step(retries=1)
@app.task
def notify(order_id: str, text: str) -> str:
    """A task declared as a step in place (``@step`` above ``@app.task``); still a task."""
    outbox.write(f"notify-{order_id}", text)
    return text


@app.task
def audit(event: str) -> None:
    """A plain task that has nothing to do with workflows."""
    outbox.write(f"audit-{event}", event)


@app.task
def place_order(order_id: str, cents: int) -> str:
    """Start a checkout workflow from inside a task (one run per order, whatever the retries)."""
    from .flows import checkout

    run = checkout.options(idempotency_key=f"order-{order_id}").start(order_id, cents)
    outbox.write(f"run-{order_id}", run.run_id)
    return run.run_id
