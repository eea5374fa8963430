"""What the shared writes need from a store: its settings and clock, ``commit`` and ``read_item``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....settings import Settings
from ...model.records import LIVE, EventRecord, RunRecord, TimerRecord
from ..plans import A, Add, Check, Cond, Item, Key, Op, Plan, Set, SetIfMissing, Update
from ..retention import expiring, write_expiry
from ..rules import lease_expiry
from . import items
from .items import to_json

__all__ = ["LIVE_COND", "UPDATE_POS", "WritesBase", "carries", "free", "past_updates", "to_json"]

#: The run is live (pending, running or suspended).
LIVE_COND = A("status").is_in(*sorted(LIVE))


#: The run item's attribute naming the position of the last update recorded in its history.
UPDATE_POS = "update_pos"


def past_updates(pos: int) -> Cond:
    """No update was recorded at op position ``pos`` or after it (updates are recorded at the
    history's frontier, so their positions only grow)."""
    return A(UPDATE_POS).missing() | (A(UPDATE_POS) < pos)


def carries(table: str, key: Key, req: str) -> Check:
    """The item at ``key`` carries request id ``req``: that request applied."""
    return Check(table, key, A("req") == req)


def free(now: float, owner: str | None = None) -> Cond:
    """No resume claims the run (``claim_run``) with a live lease, or ``owner`` does."""
    cond = A("owner").missing() | (A("lease_expires_at") < now)
    return cond if owner is None else cond | (A("owner") == owner)


class WritesBase:
    """The part of a store the shared writes stand on (provided by each store)."""

    settings: Settings

    if TYPE_CHECKING:
        from ..plans import Committed, Plan

        def now(self) -> float: ...

        def commit(self, plan: Plan) -> Committed: ...

        def read_item(self, table: str, key: Key, name: str | None = None,
                      attrs: tuple[str, ...] | None = None) -> Item | None: ...

        def query_items(self, name: str, table: str, hash_value: Any, low: Any = None,
                        high: Any = None) -> list[Item]: ...

        def newest_items(self, name: str, table: str, hash_value: Any, limit: int,
                         below: Any = None) -> list[Item]: ...

        def batch_items(self, name: str, table: str, keys: list[Key]) -> dict[Key, Item]: ...

    def lease_until(self, seconds: float | None = None) -> float:
        """A lease expiry, rounded up to a bucket so the lease index is written rarely."""
        return lease_expiry(self.now(), self.settings, seconds)

    def expiring(self, plan: Plan) -> Plan:
        """``plan`` with its history and join items expiring from now (what each store commits: see
        ``core.retention.expiring``)."""
        return expiring(plan, write_expiry(self.now(), self.settings))

    def wake_actions(self) -> tuple[Add, SetIfMissing]:
        """``ADD wake_seq 1`` and a short lease if the run has none, so whoever wakes a suspended
        run leaves a lease that covers a lost resume."""
        short = self.lease_until(min(self.settings.lease_seconds, 30.0))
        return Add("wake_seq", 1), SetIfMissing("lease_expires_at", short)

    def anchor_clock(self, anchor: str) -> Item | None:
        """The anchor's ``signal_clock`` (one consistent read of that attribute), or None if no run has that id."""
        return self.read_item("runs", (anchor,), attrs=("run_id", "signal_clock"))

    def ordered_after(self, anchor: str, number: int, wake: str) -> list[Op]:
        """The ops that store something numbered ``number`` under ``anchor`` after every earlier one
        (the anchor's ``signal_clock`` moves to ``number``, only forward) and wake run ``wake``
        while it is live: one update of the anchor when it is the run to wake (a transaction
        touches an item once)."""
        ahead = A("run_id").exists() & (A("signal_clock").missing() | (A("signal_clock") <= number))
        tick = Set("signal_clock", number)
        if wake == anchor:
            return [Update("runs", (anchor,), (*self.wake_actions(), tick), ahead & LIVE_COND)]
        return [Update("runs", (anchor,), (tick,), ahead),
                Update("runs", (wake,), self.wake_actions(), LIVE_COND)]

    def run_item(self, run: RunRecord) -> Item:
        """The item of a new run (see ``items.run_item``)."""
        return items.run_item(run, self.now(), self.settings)

    def event_item(self, event: EventRecord) -> Item:
        """The item of a history record, expiring from now (see ``core.retention``)."""
        item = items.event_item(event, self.now())
        item["retain_until"] = write_expiry(self.now(), self.settings)
        return item

    def timer_item(self, timer: TimerRecord) -> Item:
        """The item of a timer."""
        return items.timer_item(timer, self.settings.index_shards)
