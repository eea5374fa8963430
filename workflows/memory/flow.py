"""Flow control in memory: concurrency slots and rate buckets, request by request as
``persistence.flow`` makes them (a Query of a limit's slots, conditional writes with a
request id)."""

from __future__ import annotations

import functools
import random

from ..core.buckets import BUCKET_SLOT, TOKEN_ATTEMPTS, refill, wait_for_token
from ..core.records import SlotRecord
from ..core.storage import new_request
from .base import MemoryBase
from .tables import Condition, Item, Table, actions, set_


def _free_at(now: float) -> Condition:
    return lambda item: item.get("holder") is None or (item.get("expires_at") or 0) <= now


def _held_by(holder: str) -> Condition:
    return lambda item: item.get("holder") == holder


def _req_is(req: str | None) -> Condition:
    return lambda item: item.get("req") == req  # an absent bucket has no req


def _live(item: Item, now: float) -> bool:
    return item.get("holder") is not None and (item.get("expires_at") or 0) > now


class FlowTables(MemoryBase):
    """The ``flow`` table: slots (slot >= 0) and a bucket (slot -1) per limit."""

    def _init_flow(self) -> None:
        self.flow = Table("flow", "limit_id", "slot")

    def _slots(self, limit: str, capacity: int | None = None) -> list[Item]:
        last = float("inf") if capacity is None else capacity - 1
        return list(self._pages("query slots", self.flow, limit, where=lambda s: 0 <= s <= last))

    def acquire_slot(self, limit: str, capacity: int, holder: str, lease_until: float) -> int | None:
        """Take a free or expired slot of ``limit`` for ``holder``; its index, or None."""
        now = self.now()
        items = self._slots(limit, capacity)
        if any(i.get("holder") == holder and _live(i, now) for i in items):
            return None
        taken = {int(i["slot"]) for i in items if _live(i, now)}
        free = [slot for slot in range(capacity) if slot not in taken]
        random.shuffle(free)
        for slot in free:
            req = new_request()
            change = actions(set_("holder", holder), set_("expires_at", lease_until), set_("req", req))
            if self._write("acquire slot", functools.partial(self.flow.update, (limit, slot), change, _free_at(now)),
                           own=self._carries("read flow item", self.flow, (limit, slot), req)):
                return slot
        return None

    def renew_slot(self, limit: str, slot: int, holder: str, lease_until: float) -> bool:
        """Extend ``holder``'s lease on ``slot``; False if it lost the slot."""
        return self._write("renew slot", lambda: self.flow.update(
            (limit, slot), set_("expires_at", lease_until), _held_by(holder)))

    def release_slot(self, limit: str, slot: int, holder: str) -> bool:
        """Free ``slot`` if ``holder`` still holds it."""
        return self._write("release slot", lambda: self.flow.delete((limit, slot), _held_by(holder)))

    def slot_holders(self, limit: str) -> list[SlotRecord]:
        """The slot items of ``limit`` in slot order."""
        return [SlotRecord(limit, int(i["slot"]), i.get("holder"), i.get("expires_at")) for i in self._slots(limit)]

    def take_token(self, bucket: str, rate: float, burst: float) -> float:
        """Take a token of ``bucket``: 0.0, or the seconds until one is due."""
        for _ in range(TOKEN_ATTEMPTS):
            now = self.now()
            item = self._request("read bucket", lambda: self.flow.get(bucket, BUCKET_SLOT))
            tokens, at = refill(None if item is None else (item.get("tokens"), item.get("at")), now, rate, burst)
            if (wait := wait_for_token(tokens, rate)) > 0:
                return wait + (at - now)  # a clock behind the bucket's waits for it too
            req, seen = new_request(), None if item is None else item.get("req")
            cond = _req_is(seen)
            change = actions(set_("tokens", max(0.0, tokens - 1)), set_("at", at), set_("req", req))
            if self._write("take token", functools.partial(self.flow.update, (bucket, BUCKET_SLOT), change, cond),
                           own=self._carries("read bucket", self.flow, (bucket, BUCKET_SLOT), req)):
                return 0.0
        return 1 / rate
