"""Flow control in memory: concurrency slots and rate buckets, request by request as
``persistence.flow`` makes them (a Query of a limit's slots, conditional writes with a
request id)."""

from __future__ import annotations

import functools
import random

from ..core.buckets import (
    BUCKET_SLOT,
    QUEUE_PROBES,
    TOKEN_ATTEMPTS,
    TOKEN_TOLERANCE,
    refill,
    reservation_slot,
    wait_for_token,
)
from ..core.records import SlotRecord
from ..core.storage import check_inline_args, new_request
from ..errors import StorageError
from .base import MemoryBase
from .tables import Change, Condition, Item, Put, Table, Update, Write, absent, actions, present, set_


def _free_at(now: float) -> Condition:
    return lambda item: item.get("holder") is None or (item.get("expires_at") or 0) <= now


def _held_by(holder: str, token: str | None = None) -> Condition:
    return lambda item: item.get("holder") == holder and (token is None or item.get("req") == token)


def _free_or(holder: str) -> Condition:
    return lambda item: item.get("holder") in (None, holder)


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

    def acquire_slot(self, limit: str, capacity: int, holder: str, lease_until: float, *,
                     token: str | None = None) -> int | None:
        """Take a free or expired slot of ``limit`` for ``holder`` (this taking marked ``token``);
        its index, or None."""
        now = self.now()
        items = self._slots(limit, capacity)
        if any(i.get("holder") == holder and _live(i, now) for i in items):
            return None
        taken = {int(i["slot"]) for i in items if _live(i, now)}
        free = [slot for slot in range(capacity) if slot not in taken]
        random.shuffle(free)
        for slot in free:
            req = token or new_request()
            change = actions(set_("holder", holder), set_("expires_at", lease_until), set_("req", req))
            if self._write("acquire slot", functools.partial(self.flow.update, (limit, slot), change, _free_at(now)),
                           own=self._carries("read flow item", self.flow, (limit, slot), req)):
                return slot
        return None

    def renew_slot(self, limit: str, slot: int, holder: str, lease_until: float, *, token: str | None = None) -> bool:
        """Extend ``holder``'s lease on ``slot`` (its taking ``token``, if given); False if it lost the slot."""
        return self._write("renew slot", lambda: self.flow.update(
            (limit, slot), set_("expires_at", lease_until), _held_by(holder, token)))

    def release_slot(self, limit: str, slot: int, holder: str, *, token: str | None = None) -> bool:
        """Free ``slot`` if ``holder`` still holds it (by its taking ``token``, if given)."""
        return self._write("release slot", lambda: self.flow.delete((limit, slot), _held_by(holder, token)))

    def slot_holders(self, limit: str) -> list[SlotRecord]:
        """The slot items of ``limit`` in slot order."""
        return [SlotRecord(limit, int(i["slot"]), i.get("holder"), i.get("expires_at")) for i in self._slots(limit)]

    def pass_slot(self, limit: str, slot: int, holder: str, successor: str) -> bool:
        """Hand ``holder``'s slot to ``successor`` (a retry of a pass that applied is True)."""
        return self._write("pass slot", lambda: self.flow.update((limit, slot), set_("holder", successor),
                                                                  _held_by(holder)),
                           own=lambda: (self._request("read flow item", lambda: self.flow.get(limit, slot))
                                        or {}).get("holder") == successor)

    def enqueue_waiter(self, queue: str, place: int, holder: str) -> int:
        """Put ``holder`` in ``queue`` at ``place`` or the first place after it no one else has."""
        for at in range(place, place + QUEUE_PROBES):
            item = {"limit_id": queue, "slot": at, "holder": holder}
            if self._write("enqueue waiter", functools.partial(self.flow.put, item, _free_or(holder))):
                return at
        raise StorageError(f"enqueue waiter failed: {QUEUE_PROBES} places from {place} of {queue} are taken")

    def push_debounce(self, window: str, run_id: str, args: str, ends: float) -> bool:
        """Set the arguments of ``run_id`` and the end of its open debounce window, in one transaction."""
        check_inline_args(self.settings, run_id, args)
        now = self.now()
        runs: Table = self.runs  # type: ignore[attr-defined]  # the runs table, mixed in

        def open_for_run(item: Item) -> bool:
            return item.get("holder") == run_id and (item.get("expires_at") or 0) > now

        ops: list[Write] = [Update(self.flow, (window, 0), set_("expires_at", ends), open_for_run),
                            Update(runs, (run_id,), actions(set_("args", args), set_("updated_at", now)),
                                   present("run_id"))]
        return self._transact("push debounce", ops)

    def take_token(self, bucket: str, rate: float, burst: float, holder: str) -> float:
        """Take a token of ``bucket`` for ``holder``: 0.0, or the seconds until its reserved token is due."""
        mine = reservation_slot(holder)
        for _ in range(TOKEN_ATTEMPTS):
            now = self.now()
            found = self._batch_get("read bucket", self.flow, [(bucket, BUCKET_SLOT), (bucket, mine)])
            reserved = found.get((bucket, mine))
            if reserved is not None and reserved.get("holder") == holder:
                if (early := float(reserved["at"]) - now) * rate > TOKEN_TOLERANCE:
                    return early
                self._write("use reservation", lambda: self.flow.delete((bucket, mine), _held_by(holder)))
                return 0.0
            item = found.get((bucket, BUCKET_SLOT))
            tokens, at = refill(None if item is None else (item.get("tokens"), item.get("at")), now, rate, burst)
            seen = None if item is None else item.get("req")
            if wait_for_token(tokens, rate) == 0:
                req = new_request()
                change = _bucket_change(tokens - 1, at, req)
                if self._write("take token", functools.partial(self.flow.update, (bucket, BUCKET_SLOT), change,
                                                               _req_is(seen)),
                               own=self._carries("read bucket", self.flow, (bucket, BUCKET_SLOT), req)):
                    return 0.0
                continue
            due = at + (1 - tokens) / rate
            ops: list[Write] = [Update(self.flow, (bucket, BUCKET_SLOT), _bucket_change(tokens - 1, at, new_request()),
                                       _req_is(seen)),
                                Put(self.flow, {"limit_id": bucket, "slot": mine, "holder": holder, "at": due},
                                    absent("slot"))]
            if self._transact("reserve token", ops):
                return due - now
        return 1 / rate


def _bucket_change(tokens: float, at: float, req: str) -> Change:
    return actions(set_("tokens", tokens), set_("at", at), set_("req", req))
