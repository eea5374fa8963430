"""Signals: a shopping cart that collects items sent from outside until checkout.

Signals sent before the workflow waits are kept and delivered in send order.
Run it on the embedded local stack:  python -m examples.signals
"""

from __future__ import annotations

from workflows import WaitTimeout, send_signal, step, wait_for_signal, workflow


@step
def total(items: list) -> int:
    """Price the cart."""
    return sum(item["cents"] * item.get("qty", 1) for item in items)


@workflow
def cart(customer: str) -> dict:
    """Add items as ``add`` signals arrive; stop at ``checkout`` or after 30 s of silence."""
    items: list = []
    while True:
        try:
            event = wait_for_signal("cart", timeout="30s")
        except WaitTimeout:
            break
        if event["type"] == "checkout":
            break
        items.append(event["item"])
    return {"customer": customer, "items": len(items), "cents": total(items)}


if __name__ == "__main__":
    from workflows.local.embedded import embedded_stack

    with embedded_stack():
        run = cart.start("ana")
        send_signal(run.run_id, "cart", {"type": "add", "item": {"sku": "tea", "cents": 450, "qty": 2}})
        send_signal(run.run_id, "cart", {"type": "add", "item": {"sku": "cup", "cents": 1200}})
        send_signal(run.run_id, "cart", {"type": "checkout"})
        print(run.result(timeout=60))
