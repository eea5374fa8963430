"""Updates: a cart a client changes with a request and an answer (``python -m examples.updates``).

The workflow declares its handlers with ``on_update``; a client calls ``handle.update(name, payload)``
and gets the handler's answer, or ``UpdateRefused`` with the validator's message.
"""

from __future__ import annotations

from typing import Any

from workflows import on_update, step, wait_for_signal, workflow

PRICES = {"tea": 450, "cup": 1200}


@step
def bill(customer: str, cents: int) -> str:
    """Charge the customer; return a receipt."""
    return f"rcpt-{customer}-{cents}"


@workflow
def shopping_cart(customer: str) -> dict[str, Any]:
    items: dict[str, int] = {}

    def add(item: dict[str, Any]) -> int:  # the answer: the cart's total so far
        items[item["sku"]] = items.get(item["sku"], 0) + item.get("qty", 1)
        return sum(PRICES[sku] * qty for sku, qty in items.items())

    def known(item: dict[str, Any]) -> None:  # refuses before anything is recorded
        if item.get("sku") not in PRICES:
            raise ValueError(f"unknown sku {item.get('sku')!r}")

    on_update("add", add, validator=known)
    wait_for_signal("checkout", timeout="1d")
    cents = sum(PRICES[sku] * qty for sku, qty in items.items())
    return {"items": items, "cents": cents, "receipt": bill(customer, cents)}


if __name__ == "__main__":
    from workflows import UpdateRefused, send_signal
    from workflows.local.embedded import embedded_stack

    with embedded_stack():
        run = shopping_cart.start("ana")
        print("total", run.update("add", {"sku": "tea", "qty": 2}, timeout="1m"))
        print("total", run.update("add", {"sku": "cup"}, update_id="ana-cup", timeout="1m"))
        print("total", run.update("add", {"sku": "cup"}, update_id="ana-cup", timeout="1m"))  # a retry: once
        try:
            run.update("add", {"sku": "pot"}, timeout="1m")
        except UpdateRefused as refused:
            print(refused)
        send_signal(run.run_id, "checkout")
        print(run.result(timeout=60))
