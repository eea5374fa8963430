"""Workflows of the updates end-to-end test (imported by the test workers)."""

from __future__ import annotations

import time
from typing import Any

from workflows import on_update, step, wait_for_signal, workflow


@step(name="e2e_updates_slow")
def slow(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@step(name="e2e_updates_total")
def total(items: list[str]) -> int:
    return sum(len(item) for item in items)


@workflow(name="e2e_updates_cart")
def cart(work: float) -> dict[str, Any]:
    """A cart that takes items by update while it works and waits; a checkout signal ends it."""
    items: list[str] = []

    def add(item: str) -> int:
        items.append(item)
        return len(items)

    def check(item: Any) -> None:
        if not isinstance(item, str) or not item:
            raise ValueError("an item is a non-empty string")

    on_update("add", add, validator=check)
    slow(work)  # a dispatched step: an update sent meanwhile is handled after it
    wait_for_signal("checkout")
    return {"items": items, "total": total(items)}
