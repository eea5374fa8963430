"""What DynamoDB's TTL and the payload bucket's lifecycle rule do, done to the in-memory ports.

moto never expires anything, so only the memory ports can show what a deployment loses to
deletion: the testing kit and the simulator call these as their clocks move.
"""

from __future__ import annotations

from typing import Any

from .tables import Table


def tables_of(store: Any) -> list[Table]:
    """Every table of a memory store (runs, history, ..., schedules, flow)."""
    return [value for value in vars(store).values() if isinstance(value, Table)]


def expired_items(store: Any, now: float) -> list[tuple[Table, tuple[Any, ...]]]:
    """The items whose TTL (``retain_until``, epoch seconds) has passed at ``now``."""
    return [(table, key) for table in tables_of(store) for key, item in list(table.items.items())
            if isinstance(item.get("retain_until"), (int, float)) and item["retain_until"] <= now]


def expire_items(store: Any, now: float) -> int:
    """Delete every item whose TTL has passed at ``now`` (DynamoDB at its earliest); how many."""
    found = expired_items(store, now)
    with store._lock:
        for table, key in found:
            table.items.pop(key, None)
    return len(found)
