"""The writes of history records and timers: write-once records, attempts, retries, timer claims."""

from __future__ import annotations

from ...model.records import EventRecord, TimerRecord
from ..plans import A, Check, Cond, Delete, Put, Set, Update, plan
from ..rules import new_request
from .base import LIVE_COND, WritesBase, carries
from .items import WRITE_ID


class HistoryWrites(WritesBase):
    """History records keyed by (run id, seq): the key is the dedupe (see the HistoryStore port)."""

    def record_event(self, event: EventRecord) -> bool:
        """Append a record unless its key is taken; True if this call wrote it (a retry too)."""
        req = new_request()
        return self.commit(plan("record event", Put("history", {**self.event_item(event), "req": req},
                                                    A("seq").missing()),
                                own=carries("history", (event.run_id, event.seq), req))).applied

    def record_event_while_live(self, event: EventRecord) -> bool:
        """Append a record once, only while its run is live (one transaction with a check of the run)."""
        return self.commit(plan("record event", Put("history", self.event_item(event), A("seq").missing()),
                                Check("runs", (event.run_id,), LIVE_COND))).applied

    def record_attempt(self, event: EventRecord, while_live: str | None = None) -> bool:
        """Write a failed-attempt record unless its sub-position holds this attempt or a later one, only
        while run ``while_live`` (if given) is live. True if written (a retry too)."""
        if event.attempt is None:
            raise ValueError("an attempt record needs its attempt number")
        req = new_request()
        put = Put("history", {**self.event_item(event), "req": req},
                  A("seq").missing() | (A("attempt") < event.attempt))
        live = [] if while_live is None else [Check("runs", (while_live,), LIVE_COND)]
        return self.commit(plan("record attempt", put, *live, own=carries("history", (event.run_id, event.seq),
                                                                           req))).applied

    def schedule_retry(self, retry: TimerRecord, backoff: float) -> bool:
        """Store a retry timer and extend the run's lease over the backoff (one transaction); False
        if the run has ended."""
        lease = self.lease_until(backoff + self.settings.lease_seconds)
        return self.commit(plan("schedule retry", Put("timers", self.timer_item(retry)),
                                Update("runs", (retry.run_id,), (Set("lease_expires_at", lease),),
                                       LIVE_COND))).applied


class TimerWrites(WritesBase):
    """Timers in the sharded due index (see the TimerStore port)."""

    def put_timer(self, timer: TimerRecord) -> None:
        """Store or replace a timer."""
        self.commit(plan("put timer", Put("timers", self.timer_item(timer))))

    def claim_timer(self, timer_id: str, write_id: str | None = None) -> bool:
        """Take the firing of a timer for a lease (only its write ``write_id``, if given): True for
        the one caller that took it (a retry of its own lost request too)."""
        now, req = self.now(), new_request()
        cond: Cond = A("timer_id").exists() if write_id is None else A(WRITE_ID) == write_id
        cond = cond & (A("claimed_at").missing() | (A("claimed_at") < now - self.settings.lease_seconds))
        return self.commit(plan("claim timer", Update("timers", (timer_id,), (Set("claimed_at", now),
                                                                             Set("req", req)), cond),
                                own=carries("timers", (timer_id,), req))).applied

    def delete_timer(self, timer_id: str, write_id: str | None = None) -> None:
        """Delete a timer; a missing one is fine. ``write_id``: only that write of it."""
        self.commit(plan("delete timer", Delete("timers", (timer_id,),
                                                None if write_id is None else A(WRITE_ID) == write_id)))
