"""What must hold of tags and retention at the end of a scenario."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..core.model.records import TERMINAL
from ..core.storage.retention import EXPIRING_TABLES
from ..core.storage.tags import index_key, index_sort_key

if TYPE_CHECKING:
    from .world import World


def _items_of(world: World, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every item of a run in the per-run tables (timers are deleted, never expired)."""
    store = world.store
    found = [("history", i) for (r, _), i in store.events.items.items() if r == run_id or r.startswith(run_id + "#")]
    found += [("joins", i) for (j, _), i in store.joins.items.items() if j.startswith(run_id + "#")]
    found += [("signals", i) for (r, _), i in store.signal_items.items.items() if r == run_id]
    found += [("hooks", i) for i in store.hooks.items.values() if i["run_id"] == run_id]
    found += [("tags", i) for i in store.run_tags.items.values() if i["run_id"] == run_id]
    return found


def check_retention(world: World) -> None:
    """A run's tag index items are its tags; a live run's items carry no TTL but its history and
    join items (written expiring, kept alive); a stamped run's items all carry at least the run's TTL
    (a run out of the retention index with one unstamped is a violation)."""
    store = world.store
    for (run_id,), run in store.runs.items.items():
        tags = json.loads(run.get("tags") or "{}")
        indexed = {i["tag"] for i in store.run_tags.items.values() if i["run_id"] == run_id}
        expected = {index_key(k, v, run_id) for k, v in tags.items()}
        if indexed != expected and not ("retain_until" in run and indexed < expected):  # TTL deletes in any order
            world.violations.append(f"run {run_id}: tag index items {sorted(indexed)} but tags {tags}")
        for item in store.run_tags.items.values():
            if item["run_id"] == run_id and item["run_key"] != index_sort_key(run["created_at"], run_id):
                world.violations.append(f"run {run_id}: a tag index item sorts as {item['run_key']}")
        items = _items_of(world, run_id)
        if run["status"] not in TERMINAL:
            stamped = [t for t, i in items if "retain_until" in i and t not in EXPIRING_TABLES]
            if stamped or "retain_until" in run:
                world.violations.append(f"live run {run_id} has a TTL on items of {sorted(set(stamped))}")
        elif "retain_shard" not in run:
            until = run.get("retain_until")
            missed = sorted({t for t, i in items if not _lasts(t, i.get("retain_until"), until)})
            if missed:
                world.violations.append(f"run {run_id} was stamped but items of {missed} lack its TTL {until}")


def _lasts(table: str, ttl: Any, until: Any) -> bool:
    """An item's TTL keeps it at least as long as its run's. A run without one (a live chain's first run,
    or retention off) has none on its items but the history and join items written expiring."""
    if until is None:
        return ttl is None or table in EXPIRING_TABLES
    return isinstance(ttl, (int, float)) and ttl >= until
