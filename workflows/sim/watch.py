"""The read-side detector: a read that finds an item or object the world deleted, made on
behalf of a live run (the reading task's run, or the run the item belonged to, is live),
is a violation named with the run, the item and when it was deleted.

The world's tables and bucket are shared by every process's view of the store, so wrapping
their reads once sees every read the engine makes (GetItem, BatchGetItem, a Query of a
table's own key, GetObject); reads of an index (sweeps) are not watched.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

from ..core.model.records import TERMINAL, RunStatus
from ..memory.tables import Item, Table

if TYPE_CHECKING:
    from .world import World

DAY = 86_400.0


def chain_live(world: World, run_id: str) -> bool:
    """Whether a run, or the continue-as-new chain it is part of, is live (deleted runs count as they were)."""
    seen: set[str] = set()
    while run_id and run_id not in seen:
        seen.add(run_id)
        item = world.store.runs.items.get((run_id,)) or world.decay.runs.get(run_id)
        if item is None:
            return False
        if item["status"] not in TERMINAL:
            return True
        if item["status"] != RunStatus.CONTINUED:
            return False
        run_id = item.get("continued_to") or ""
    return False


def install(world: World) -> None:
    """Watch every read of the world's tables and payload bucket."""
    for table in world.decay.tables.values():
        table.get = _watched_get(world, table, table.get)  # type: ignore[method-assign]
        table.query = _watched_query(world, table, table.query)  # type: ignore[method-assign]
    blobs = world.store.blob_objects
    blobs.get_blob = _watched_blob(world, blobs.get_blob)  # type: ignore[method-assign,assignment]


def _watched_get(world: World, table: Table, get: Callable[..., Item | None]) -> Callable[..., Item | None]:
    @functools.wraps(get)
    def watched(*key: Any) -> Item | None:
        item = get(*key)
        if item is None:
            gone = world.decay.gone.get((table.name, tuple(key)))
            if gone is not None:
                _report(world, f"{table.name} item {tuple(key)}", gone.at, gone.owner)
        return item
    return watched


def _watched_query(world: World, table: Table, query: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(query)
    def watched(hash_value: Any, **options: Any) -> Any:
        if options.get("index") is None:
            gone = world.decay.gone_parts.get((table.name, hash_value))
            if gone is not None:
                _report(world, f"{table.name} items of {hash_value!r} (a Query)", gone.at, gone.owner)
        return query(hash_value, **options)
    return watched


def _watched_blob(world: World, get_blob: Callable[[str], bytes | None]) -> Callable[[str], bytes | None]:
    @functools.wraps(get_blob)
    def watched(key: str) -> bytes | None:
        data = get_blob(key)
        if data is None and key in world.decay.gone_objects:
            _report(world, f"payload object {key[:20]}...", world.decay.gone_objects[key][0], "")
        return data
    return watched


def _report(world: World, what: str, deleted_at: float, owner: str) -> None:
    actor = world.baton.actor()
    reader = actor.run_id if actor is not None else ""
    for run_id in dict.fromkeys((reader, owner)):
        if run_id and chain_live(world, run_id):
            world.violations.append(
                f"live run {run_id} read {what} (of run {owner or '?'}), which the world deleted at "
                f"day {(deleted_at - world.start) / DAY:.2f}; read by {getattr(actor, 'name', 'a thread')} "
                f"at day {(world.time - world.start) / DAY:.2f}")
            return
