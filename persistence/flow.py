"""Flow control in DynamoDB: concurrency slots and rate buckets shared by every worker.

One item per slot of a limit (``limit_id``, ``slot`` >= 0) and one bucket item per rate
limit (``slot`` = -1), in the ``flow`` table. Every write is conditional and carries a
request id, so a retry of a write whose response was lost is recognised as our own.
"""

from __future__ import annotations

import functools
import random
from datetime import datetime, timezone
from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.buckets import (
    BUCKET_SLOT,
    QUEUE_PROBES,
    TOKEN_ATTEMPTS,
    TOKEN_TOLERANCE,
    refill,
    reservation_slot,
    wait_for_token,
)
from workflows.core.records import SlotRecord
from workflows.core.storage import check_inline_args, new_request
from workflows.errors import StorageError

from .base import StoreBase

#: Seconds after its due time that a token reservation nobody came back for expires (DynamoDB TTL).
ABANDONED_RESERVATION = 86400.0


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

    def acquire_slot(self, limit: str, capacity: int, holder: str, lease_until: float, *,
                     token: str | None = None) -> int | None:
        """Take a free or expired slot of ``limit`` for ``holder`` (this taking marked ``token``);
        its index, or None."""
        Flow, now = self.m.Flow, self.now()
        with self.errors("query slots"):
            items = list(Flow.query(limit, Flow.slot.between(0, capacity - 1), consistent_read=True))
        taken = {int(i.slot) for i in items if i.holder is not None and (i.expires_at or 0) > now}
        if any(i.holder == holder and (i.expires_at or 0) > now for i in items):
            return None  # another copy of this attempt holds a slot
        free = [slot for slot in range(capacity) if slot not in taken]
        random.shuffle(free)  # takers racing for the same free slot would lose to each other
        for slot in free:
            if self._take_slot(limit, slot, holder, lease_until, now, token or new_request()):
                return slot
        return None

    def _take_slot(self, limit: str, slot: int, holder: str, lease_until: float, now: float, req: str) -> bool:
        Flow = self.m.Flow
        cond = Flow.holder.does_not_exist() | (Flow.expires_at <= now)
        actions = [Flow.holder.set(holder), Flow.expires_at.set(lease_until), Flow.req.set(req)]
        return self.conditional("acquire slot", lambda: Flow(limit, slot).update(actions=actions, condition=cond),
                                own=lambda: self._owns(limit, slot, req))

    def _held_by(self, holder: str, token: str | None) -> Any:
        """The condition that ``holder`` holds a slot (by its taking ``token``, if given)."""
        Flow = self.m.Flow
        return Flow.holder == holder if token is None else (Flow.holder == holder) & (Flow.req == token)

    def renew_slot(self, limit: str, slot: int, holder: str, lease_until: float, *, token: str | None = None) -> bool:
        """Extend ``holder``'s lease on ``slot`` (its taking ``token``, if given); False if it lost the slot."""
        Flow = self.m.Flow
        return self.conditional("renew slot", lambda: Flow(limit, slot).update(
            actions=[Flow.expires_at.set(lease_until)], condition=self._held_by(holder, token)))

    def release_slot(self, limit: str, slot: int, holder: str, *, token: str | None = None) -> bool:
        """Free ``slot`` if ``holder`` still holds it (by its taking ``token``, if given)."""
        Flow = self.m.Flow
        return self.conditional("release slot", lambda: Flow(limit, slot).delete(
            condition=self._held_by(holder, token)))

    def slot_holders(self, limit: str) -> list[SlotRecord]:
        """The slot items of ``limit`` in slot order."""
        Flow = self.m.Flow
        with self.errors("query slots"):
            items = list(Flow.query(limit, Flow.slot >= 0, consistent_read=True))
        return [SlotRecord(limit, int(i.slot), i.holder, i.expires_at) for i in items]

    def pass_slot(self, limit: str, slot: int, holder: str, successor: str) -> bool:
        """Hand ``holder``'s slot to ``successor`` (a retry of a pass that applied is True)."""
        Flow = self.m.Flow

        def passed() -> bool:
            item = self._get_flow("read flow item", limit, slot)
            return item is not None and item.holder == successor

        return self.conditional("pass slot", lambda: Flow(limit, slot).update(
            actions=[Flow.holder.set(successor)], condition=Flow.holder == holder), own=passed)

    def enqueue_waiter(self, queue: str, place: int, holder: str) -> int:
        """Put ``holder`` in ``queue`` at ``place`` or the first place after it no one else has."""
        Flow = self.m.Flow
        cond = Flow.holder.does_not_exist() | (Flow.holder == holder)
        for at in range(place, place + QUEUE_PROBES):
            save = functools.partial(Flow(queue, at, holder=holder).save, condition=cond)
            if self.conditional("enqueue waiter", save):
                return at
        raise StorageError(f"enqueue waiter failed: {QUEUE_PROBES} places from {place} of {queue} are taken")

    def push_debounce(self, window: str, run_id: str, args: str, ends: float) -> bool:
        """Set the arguments of ``run_id`` and the end of its open debounce window, in one transaction."""
        check_inline_args(self.settings, run_id, args)
        Flow, Run, now = self.m.Flow, self.m.Run, self.now()

        def build(tx: Any) -> None:
            tx.update(Flow(window, 0), actions=[Flow.expires_at.set(ends)],
                      condition=(Flow.holder == run_id) & (Flow.expires_at > now))
            tx.update(Run(run_id), actions=[Run.args.set(args), Run.updated_at.set(now)],
                      condition=Run.run_id.exists())

        return self.transact("push debounce", build)

    def take_token(self, bucket: str, rate: float, burst: float, holder: str) -> float:
        """Take a token of ``bucket`` for ``holder``: 0.0, or the seconds until its reserved token is due."""
        Flow, mine = self.m.Flow, reservation_slot(holder)
        for _ in range(TOKEN_ATTEMPTS):
            now = self.now()
            with self.errors("read bucket"):
                found = {int(i.slot): i for i in Flow.batch_get([(bucket, BUCKET_SLOT), (bucket, mine)],
                                                                 consistent_read=True)}
            reserved = found.get(mine)
            if reserved is not None and reserved.holder == holder:
                if (early := float(reserved.at) - now) * rate > TOKEN_TOLERANCE:
                    return early
                self.conditional("use reservation", lambda: Flow(bucket, mine).delete(condition=Flow.holder == holder))
                return 0.0
            item = found.get(BUCKET_SLOT)
            tokens, at = refill(None if item is None else (item.tokens, item.at), now, rate, burst)
            seen = None if item is None else item.req
            if wait_for_token(tokens, rate) == 0:
                if self._spend(bucket, seen, tokens - 1, at):
                    return 0.0
                continue
            due = at + (1 - tokens) / rate
            if self._reserve(bucket, seen, tokens - 1, at, holder, due):
                return due - now
        return 1 / rate  # the bucket kept changing under us: try again when a token is due

    def _bucket_update(self, seen_req: str | None, tokens: float, at: float) -> tuple[list[Any], Any, str]:
        Flow, req = self.m.Flow, new_request()
        cond = Flow.req.does_not_exist() if seen_req is None else Flow.req == seen_req
        return [Flow.tokens.set(tokens), Flow.at.set(at), Flow.req.set(req)], cond, req

    def _spend(self, bucket: str, seen_req: str | None, tokens: float, at: float) -> bool:
        Flow = self.m.Flow
        actions, cond, req = self._bucket_update(seen_req, tokens, at)
        return self.conditional("take token", lambda: Flow(bucket, BUCKET_SLOT).update(actions=actions, condition=cond),
                                own=lambda: self._owns(bucket, BUCKET_SLOT, req))

    def _reserve(self, bucket: str, seen_req: str | None, tokens: float, at: float, holder: str, due: float) -> bool:
        Flow = self.m.Flow
        actions, cond, _ = self._bucket_update(seen_req, tokens, at)

        def build(tx: Any) -> None:
            tx.update(Flow(bucket, BUCKET_SLOT), actions=actions, condition=cond)
            tx.save(Flow(bucket, reservation_slot(holder), holder=holder, at=due,  # expires if its step never comes
                         retain_until=datetime.fromtimestamp(due + ABANDONED_RESERVATION, timezone.utc)),
                    condition=Flow.slot.does_not_exist())

        return self.transact("reserve token", build)
