"""The state invariant of a deleting world: everything a live run may read exists.

Checked whenever the world's deletable state may have changed (a scan, a deletion, a moment
an item becomes eligible for TTL): for every live run,

* none of its own items (run, history, joins, signals -- pending ones too -- hooks, tags,
  idempotency key) is past its TTL or deleted;
* no payload object its items reference is expired by the lifecycle rule or deleted;
* the first run of its continue-as-new chain (which handles and idempotency keys name) is
  neither past its TTL nor deleted.

A child's result read through a handle is watched at the read (``watch``): a fix may keep a
child's result wherever it likes. And when TTL deletes an item, the run it belonged to must
not be live (:func:`check_deleting`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..core.model.records import TERMINAL, RunStatus
from .decay import DAY, owner_of
from .watch import chain_live

if TYPE_CHECKING:
    from .world import World

#: A payload object's key: ``payloads/<run id>/<sha256>`` (or the older, never-expiring ``payloads/<sha256>``).
OBJECT = re.compile(r"payloads/(?:[^/\"\\\s]+/)?[0-9a-f]{64}")


def _day(world: World, at: float) -> str:
    return f"day {(at - world.start) / DAY:.2f}"


def check_deleting(world: World, what: str, owner: str) -> None:
    """TTL is about to delete ``what``, an item of run ``owner``: that run must not be live, nor the
    first run (the anchor) of a live continue-as-new chain. A later run of a chain that continued is
    read by nothing live (handles, keys and signals name the anchor), so it may expire under it."""
    run = world.store.runs.items.get((owner,)) or world.decay.runs.get(owner)
    if run is not None and run["status"] == RunStatus.CONTINUED and run.get("chain_head"):
        return
    if chain_live(world, owner):
        world.violations.append(f"TTL deletes {what} of live run {owner} at {_day(world, world.time)}")


def check_kept(world: World) -> None:
    """Everything a live run may read exists and is not eligible for deletion."""
    store, now = world.store, world.time
    live = {run_id for (run_id,), run in store.runs.items.items() if run["status"] not in TERMINAL}
    if not live:
        return
    expired: set[str] | None = None
    for name, table in world.decay.tables.items():
        if name in ("timers", "flow", "schedules"):
            continue
        for key, item in table.items.items():
            owner = owner_of(table, key, item)
            if owner not in live:
                continue
            until = item.get("retain_until")
            if isinstance(until, (int, float)) and until <= now:
                world.violations.append(f"live run {owner}'s {name} item {key} is past its TTL "
                                        f"({_day(world, until)}) at {_day(world, now)}")
                return
            objects = [m for value in item.values() if isinstance(value, str) for m in OBJECT.findall(value)]
            if objects:
                expired = world.decay.expired_objects() if expired is None else expired
                lost = [o for o in objects if o in expired]
                if lost:
                    world.violations.append(f"live run {owner}'s {name} item {key} references payload object "
                                            f"{lost[0][:20]}..., which the lifecycle rule expires or expired "
                                            f"(at {_day(world, now)})")
                    return
    for run_id in sorted(live):
        _check_anchor(world, run_id)


def _check_anchor(world: World, run_id: str) -> None:
    """The first run of a live chain is kept (handles and idempotency keys name it)."""
    first, seen = run_id, set()
    while first not in seen:
        seen.add(first)
        item = _run(world, first)
        before = None if item is None else item.get("continued_from")
        if not before:
            break
        first = before
    if first == run_id:
        return
    gone = world.decay.gone.get(("runs", (first,)))
    if gone is not None:
        world.violations.append(f"the first run {first} of live chain (now {run_id}) was deleted at "
                                f"{_day(world, gone.at)}")
        return
    item = _run(world, first) or {}
    until = item.get("retain_until")
    if isinstance(until, (int, float)) and until <= world.time:
        world.violations.append(f"the first run {first} of live chain (now {run_id}) is past its TTL "
                                f"({_day(world, until)}) at {_day(world, world.time)}")


def _run(world: World, run_id: str) -> dict[str, Any] | None:
    return world.store.runs.items.get((run_id,)) or world.decay.runs.get(run_id)
