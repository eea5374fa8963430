"""Flow control in DynamoDB: concurrency slots and rate buckets shared by every worker.

One item per slot of a limit (``limit_id``, ``slot`` >= 0) and one bucket item per rate
limit (``slot`` = -1), in the ``flow`` table. Every write is conditional and carries a
request id, so a retry of a write whose response was lost is recognised as our own.
"""

from __future__ import annotations

import random
from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.buckets import BUCKET_SLOT, TOKEN_ATTEMPTS, refill, wait_for_token
from workflows.core.records import SlotRecord
from workflows.core.storage import new_request

from .base import StoreBase


class FlowStore(StoreBase):
    """Concurrency slots (leased, reclaimed when their lease passes) and token buckets."""

    def _get_flow(self, action: str, limit: str, slot: int) -> Any:
        try:
            with self.errors(action):
                return self.m.Flow.get(limit, slot, consistent_read=True)
        except DoesNotExist:
            return None

    def _owns(self, limit: str, slot: int, req: str) -> bool:
        item = self._get_flow("read flow item", limit, slot)
        return item is not None and item.req == req

    def acquire_slot(self, limit: str, capacity: int, holder: str, lease_until: float) -> int | None:
        """Take a free or expired slot of ``limit`` for ``holder``; its index, or None."""
        Flow, now = self.m.Flow, self.now()
        with self.errors("query slots"):
            items = list(Flow.query(limit, Flow.slot.between(0, capacity - 1), consistent_read=True))
        taken = {int(i.slot) for i in items if i.holder is not None and (i.expires_at or 0) > now}
        if any(i.holder == holder and (i.expires_at or 0) > now for i in items):
            return None  # another copy of this attempt holds a slot
        free = [slot for slot in range(capacity) if slot not in taken]
        random.shuffle(free)  # takers racing for the same free slot would lose to each other
        for slot in free:
            if self._take_slot(limit, slot, holder, lease_until, now):
                return slot
        return None

    def _take_slot(self, limit: str, slot: int, holder: str, lease_until: float, now: float) -> bool:
        Flow, req = self.m.Flow, new_request()
        cond = Flow.holder.does_not_exist() | (Flow.expires_at <= now)
        actions = [Flow.holder.set(holder), Flow.expires_at.set(lease_until), Flow.req.set(req)]
        return self.conditional("acquire slot", lambda: Flow(limit, slot).update(actions=actions, condition=cond),
                                own=lambda: self._owns(limit, slot, req))

    def renew_slot(self, limit: str, slot: int, holder: str, lease_until: float) -> bool:
        """Extend ``holder``'s lease on ``slot``; False if it lost the slot."""
        Flow = self.m.Flow
        return self.conditional("renew slot", lambda: Flow(limit, slot).update(
            actions=[Flow.expires_at.set(lease_until)], condition=Flow.holder == holder))

    def release_slot(self, limit: str, slot: int, holder: str) -> bool:
        """Free ``slot`` if ``holder`` still holds it."""
        Flow = self.m.Flow
        return self.conditional("release slot", lambda: Flow(limit, slot).delete(condition=Flow.holder == holder))

    def slot_holders(self, limit: str) -> list[SlotRecord]:
        """The slot items of ``limit`` in slot order."""
        Flow = self.m.Flow
        with self.errors("query slots"):
            items = list(Flow.query(limit, Flow.slot >= 0, consistent_read=True))
        return [SlotRecord(limit, int(i.slot), i.holder, i.expires_at) for i in items]

    def take_token(self, bucket: str, rate: float, burst: float) -> float:
        """Take a token of ``bucket``: 0.0, or the seconds until one is due."""
        for _ in range(TOKEN_ATTEMPTS):
            now, item = self.now(), self._get_flow("read bucket", bucket, BUCKET_SLOT)
            tokens, at = refill(None if item is None else (item.tokens, item.at), now, rate, burst)
            if (wait := wait_for_token(tokens, rate)) > 0:
                return wait + (at - now)  # a clock behind the bucket's waits for it too
            if self._spend(bucket, None if item is None else item.req, max(0.0, tokens - 1), at):
                return 0.0
        return 1 / rate  # the bucket kept changing under us: try again when a token is due

    def _spend(self, bucket: str, seen_req: str | None, tokens: float, at: float) -> bool:
        Flow, req = self.m.Flow, new_request()
        cond = Flow.req.does_not_exist() if seen_req is None else Flow.req == seen_req
        actions = [Flow.tokens.set(tokens), Flow.at.set(at), Flow.req.set(req)]
        return self.conditional("take token", lambda: Flow(bucket, BUCKET_SLOT).update(actions=actions, condition=cond),
                                own=lambda: self._owns(bucket, BUCKET_SLOT, req))
