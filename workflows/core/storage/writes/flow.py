"""Flow control shared by the fleet: concurrency slots and rate buckets (see docs/flow-control.md).

One item per slot of a limit (``limit_id``, slot number >= 0) and one bucket item per rate limit
(slot number -1), in the ``flow`` table (the slot number, its sort key, is stored as ``slot``).
Every write is conditional and carries a request id, so a retry of a write whose response was
lost is recognised as our own.
"""

from __future__ import annotations

import random

from ....errors import StorageError
from ...model.buckets import (
    BUCKET_SLOT_NUMBER,
    QUEUE_PROBES,
    TOKEN_ATTEMPTS,
    TOKEN_TOLERANCE,
    refill,
    reservation_slot_number,
    wait_for_token,
)
from ...model.records import SlotRecord
from ..plans import A, Check, Cond, Delete, Put, Set, Update, plan
from ..rules import check_inline_args, new_request
from .base import WritesBase, carries
from .items import SLOT_NUMBER

#: Seconds after its due time that a token reservation nobody came back for expires (TTL).
ABANDONED_RESERVATION = 86400.0


def _held_by(holder: str, token: str | None = None) -> Cond:
    """``holder`` holds the slot (by its taking ``token``, if given)."""
    cond = A("holder") == holder
    return cond if token is None else cond & (A("req") == token)


class FlowWrites(WritesBase):
    """Slots (leased, reclaimed when their lease passes) and token buckets (see the FlowStore port)."""

    def _slots(self, limit: str, capacity: int | None = None) -> list[SlotRecord]:
        items = self.query_items("query slots", "flow", limit, 0, None if capacity is None else capacity - 1)
        return [SlotRecord(limit, int(i[SLOT_NUMBER]), i.get("holder"), i.get("expires_at")) for i in items]

    def slot_holders(self, limit: str) -> list[SlotRecord]:
        """The items of ``limit`` in slot-number order (one Query)."""
        return self._slots(limit)

    def acquire_slot(self, limit: str, capacity: int, holder: str, lease_until: float, *,
                     token: str | None = None) -> int | None:
        """Take a free or expired slot of ``limit`` for ``holder`` (this taking marked ``token``); its index,
        or None (every slot held, or ``holder`` holds one already)."""
        now = self.now()
        live = [s for s in self._slots(limit, capacity) if s.holder is not None and (s.expires_at or 0) > now]
        if any(s.holder == holder for s in live):
            return None  # another copy of this attempt holds a slot
        free = [slot for slot in range(capacity) if slot not in {s.number for s in live}]
        random.shuffle(free)  # takers racing for the same free slot would lose to each other
        for slot in free:
            req = token or new_request()
            if self.commit(plan("acquire slot", Update("flow", (limit, slot), (
                    Set("holder", holder), Set("expires_at", lease_until), Set("req", req)),
                    A("holder").missing() | (A("expires_at") <= now)), own=carries("flow", (limit, slot), req))):
                return slot
        return None

    def renew_slot(self, limit: str, number: int, holder: str, lease_until: float, *,
                   token: str | None = None) -> bool:
        """Extend ``holder``'s lease on slot ``number`` (its taking ``token``, if given); False if it lost it."""
        return self.commit(plan("renew slot", Update("flow", (limit, number), (Set("expires_at", lease_until),),
                                                     _held_by(holder, token)))).applied

    def release_slot(self, limit: str, number: int, holder: str, *, token: str | None = None) -> bool:
        """Free slot ``number`` if ``holder`` still holds it (by its taking ``token``, if given)."""
        return self.commit(plan("release slot", Delete("flow", (limit, number), _held_by(holder, token)))).applied

    def pass_slot(self, limit: str, number: int, holder: str, successor: str) -> bool:
        """Hand ``holder``'s slot ``number`` to ``successor`` (a retry of a pass that applied is True)."""
        return self.commit(plan("pass slot", Update("flow", (limit, number), (Set("holder", successor),),
                                                    _held_by(holder)),
                                own=Check("flow", (limit, number), A("holder") == successor))).applied

    def enqueue_waiter(self, queue: str, place: int, holder: str) -> int:
        """Put ``holder`` in ``queue`` at ``place`` or the first place after it no one else has."""
        for at in range(place, place + QUEUE_PROBES):
            if self.commit(plan("enqueue waiter", Put("flow", {"limit_id": queue, SLOT_NUMBER: at, "holder": holder},
                                                      A("holder").missing() | (A("holder") == holder)))):
                return at
        raise StorageError(f"enqueue waiter failed: {QUEUE_PROBES} places from {place} of {queue} are taken")

    def push_debounce(self, window: str, run_id: str, args: str, ends: float) -> bool:
        """Set the arguments of ``run_id`` and the end of its open debounce window, in one transaction."""
        check_inline_args(self.settings, run_id, args)
        now = self.now()
        return self.commit(plan("push debounce", Update("flow", (window, 0), (Set("expires_at", ends),),
                                                        (A("holder") == run_id) & (A("expires_at") > now)),
                                Update("runs", (run_id,), (Set("args", args), Set("updated_at", now)),
                                       A("run_id").exists()))).applied

    def take_token(self, bucket: str, rate: float, burst: float, holder: str) -> float:
        """Take a token of ``bucket`` for ``holder``: 0.0, or the seconds until its reserved token is due."""
        mine = reservation_slot_number(holder)
        for _ in range(TOKEN_ATTEMPTS):
            now = self.now()
            found = self.batch_items("read bucket", "flow", [(bucket, BUCKET_SLOT_NUMBER), (bucket, mine)])
            reserved = found.get((bucket, mine))
            if reserved is not None and reserved.get("holder") == holder:
                if (early := float(reserved["at"]) - now) * rate > TOKEN_TOLERANCE:
                    return early
                self.commit(plan("use reservation", Delete("flow", (bucket, mine), A("holder") == holder)))
                return 0.0
            item = found.get((bucket, BUCKET_SLOT_NUMBER))
            tokens, at = refill(None if item is None else (item.get("tokens"), item.get("at")), now, rate, burst)
            seen, req = (None if item is None else item.get("req")), new_request()
            spend = Update("flow", (bucket, BUCKET_SLOT_NUMBER),
                           (Set("tokens", tokens - 1), Set("at", at), Set("req", req)),
                           A("req").missing() if seen is None else A("req") == seen)
            if wait_for_token(tokens, rate) == 0:
                if self.commit(plan("take token", spend, own=carries("flow", (bucket, BUCKET_SLOT_NUMBER), req))):
                    return 0.0
                continue
            due = at + (1 - tokens) / rate
            if self.commit(plan("reserve token", spend, Put("flow", {  # expires if its step never comes
                    "limit_id": bucket, SLOT_NUMBER: mine, "holder": holder, "at": due,
                    "retain_until": due + ABANDONED_RESERVATION}, A(SLOT_NUMBER).missing()))):
                return due - now
        return 1 / rate  # the bucket kept changing under us: try again when a token is due
