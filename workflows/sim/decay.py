"""The simulated world deletes and lags as AWS does.

* DynamoDB's TTL deletes an item some time after its ``retain_until`` passed: here a delay of
  0-48 h drawn per item by the seed, so items go late and in any order.
* The payload bucket's lifecycle rule (modelled by ``MemoryBlobs.expire``) removes an object
  0-48 h (drawn per object) after a scan finds it expired; scans run at least hourly.
* SQS drops a message older than its queue's retention period (4 days: ``workflows init-aws``
  sets none on the work queues, so SQS's default ``MessageRetentionPeriod`` applies).
* Global secondary indexes lag behind the writes they reflect (``IndexLag``): up to a few
  seconds, by the seed.

What went is remembered (:attr:`Decay.gone`, :attr:`Decay.gone_objects`), so that a read of it
can be named (``watch``) and the end checks still see how each run ended.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import random
from typing import TYPE_CHECKING, Any

from ..memory.expiry import tables_of
from ..memory.tables import IndexLag, Item, Table

if TYPE_CHECKING:
    from .world import World

HOUR, DAY = 3600.0, 86_400.0
LATE = 48 * HOUR  # TTL and the lifecycle rule delete up to this long after they may
SCAN_EVERY = HOUR  # the world looks for newly expired items and objects at least this often
QUEUE_RETENTION = 4 * DAY  # SQS's default MessageRetentionPeriod (the work queues keep it)
INDEX_LAGS = (0.0, 0.5, 1.0, 3.0)  # the longest index lag of a seed, seconds


@dataclasses.dataclass(frozen=True)
class Gone:
    """An item or object the world deleted: when, and which run it belonged to."""

    at: float
    owner: str


def owner_of(table: Table, key: tuple[Any, ...], item: Item) -> str:
    """The run an item belongs to (a join's id and a history key may carry ``#`` suffixes)."""
    return str(item.get("run_id") or key[0]).split("#")[0]


class Decay:
    """What TTL, the lifecycle rule and SQS retention delete in one world, late and in any order."""

    def __init__(self, world: World, seed: int) -> None:
        self.world = world
        self.rng = random.Random(seed ^ 0xDECAF)
        self.tables = {table.name: table for table in tables_of(world.store)}
        self.items: dict[tuple[str, tuple[Any, ...]], float] = {}  # (table, key) -> when TTL deletes it
        self.eligible: dict[tuple[str, tuple[Any, ...]], float] = {}  # (table, key) -> its retain_until
        self.objects: dict[str, float] = {}  # object key -> when the lifecycle rule deletes it
        self.gone: dict[tuple[str, tuple[Any, ...]], Gone] = {}
        self.gone_parts: dict[tuple[str, Any], Gone] = {}  # (table, hash key): a partition lost an item
        self.gone_objects: dict[str, tuple[float, bytes]] = {}
        self.runs: dict[str, Item] = {}  # deleted run items, as they were (the end checks read them)
        self.last_scan = float("-inf")
        self._firsts: tuple[float, float, list[float]] | None = None  # see moments (None: to work out)
        lag = self.rng.choice(INDEX_LAGS)
        if lag:
            for table in self.tables.values():
                if table.indexes:
                    table.lag = IndexLag(world.true_time, lambda: self.rng.uniform(0.0, lag))

    # -- when ----------------------------------------------------------------------------------
    def moments(self) -> list[float]:
        """When something is next deleted or becomes eligible for deletion."""
        first_item, first_object, eligible = self._first()
        later = bisect.bisect_right(eligible, self.world.time)  # the first eligible after now
        return [first_item, first_object, eligible[later] if later < len(eligible) else float("inf")]

    def _first(self) -> tuple[float, float, list[float]]:
        """The first deletion of an item, of an object, and every eligibility moment in order."""
        if self._firsts is None:  # worked out again after each scan (the only time these change)
            self._firsts = (min(self.items.values(), default=float("inf")),
                            min(self.objects.values(), default=float("inf")), sorted(self.eligible.values()))
        return self._firsts

    def _due(self, now: float) -> bool:
        """Whether ``min(moments()) <= now``: an item or object is due for deletion (the next
        eligibility moment is always after now)."""
        first_item, first_object, _ = self._first()
        return first_item <= now or first_object <= now

    def step(self) -> bool:
        """Delete what is due now; True if the world's deletable state was looked at."""
        now = self.world.time
        self.world.broker.expire(now, QUEUE_RETENTION)
        if now - self.last_scan < SCAN_EVERY and not self._due(now):
            return False
        self.last_scan = now
        self._firsts = None
        expired = self._expired_objects(now)
        self._scan(now, expired)
        self._delete_items(now)
        self._delete_objects(now, expired)
        return True

    def expired_objects(self) -> set[str]:
        """The objects the lifecycle rule may delete now (or has)."""
        return self._expired_objects(self.world.time) | set(self.gone_objects)

    # -- finding ----------------------------------------------------------------------------------
    def _scan(self, now: float, expired: set[str]) -> None:
        for name, table in self.tables.items():
            for key, item in table.items.items():
                until = item.get("retain_until")
                if isinstance(until, (int, float)) and (name, key) not in self.items:
                    self.items[name, key] = until + self.rng.uniform(0.0, LATE)
                    self.eligible[name, key] = until
        for name in sorted(expired - set(self.objects)):
            self.objects[name] = now + self.rng.uniform(0.0, LATE)

    def _expired_objects(self, now: float) -> set[str]:
        """Ask the bucket's lifecycle rule (on a copy of the bucket) what it removes by ``now``."""
        blobs = self.world.store.blob_objects
        probe = copy.copy(blobs)
        for name, value in vars(blobs).items():
            if isinstance(value, (dict, set, list)):
                setattr(probe, name, copy.copy(value))
        return set(probe.expire(now, self.world.settings.payload_expiry))

    # -- deleting ---------------------------------------------------------------------------------
    def _delete_items(self, now: float) -> None:
        due = sorted(k for k, at in self.items.items() if at <= now)
        self.rng.shuffle(due)  # TTL deletes in any order
        for name, key in due:
            del self.items[name, key]
            self.eligible.pop((name, key), None)
            table = self.tables[name]
            item = table.items.get(key)
            until = None if item is None else item.get("retain_until")
            if item is None or not isinstance(until, (int, float)) or until > now:
                continue  # gone already, or written since without (or with a later) TTL
            owner = owner_of(table, key, item)
            self.world.deleting(f"{name} item {key}", owner)
            table.expire(key)
            self.gone[name, key] = self.gone_parts[name, key[0]] = Gone(now, owner)
            if name == "runs":
                self.runs[key[0]] = item

    def _delete_objects(self, now: float, expired: set[str]) -> None:
        blobs = self.world.store.blob_objects
        for key in sorted(k for k, at in self.objects.items() if at <= now):
            del self.objects[key]
            if key not in expired:
                continue  # written again since: its age starts over
            data = blobs.get_blob(key)
            blobs.delete_blob(key)
            if data is not None:
                self.gone_objects[key] = (now, data)
