"""The append-only history: one record per op outcome or failed attempt, written once."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.records import EventRecord, TimerRecord, event_seq

from .base import LIVE_STATUSES, StoreBase, check_item_size, new_request


def _event_record(item: Any) -> EventRecord:
    return EventRecord(run_id=item.run_id, seq=int(item.seq), kind=item.kind, status=item.status, at=item.at,
                       name=item.name, data=item.data, error=item.error,
                       attempt=None if item.attempt is None else int(item.attempt), started_at=item.started_at)


class HistoryStore(StoreBase):
    """History records keyed by (run id, op position): the key is the dedupe."""

    def event_item(self, event: EventRecord) -> Any:
        """Return the model item for ``event`` (size-checked)."""
        check_item_size({"data": event.data, "error": event.error})
        return self.m.Event(event.run_id, event.seq, kind=event.kind, name=event.name, pos=event.pos,
                            status=event.status, at=event.at or self.now(), data=event.data,
                            error=event.error, attempt=event.attempt, started_at=event.started_at)

    def record_event(self, event: EventRecord) -> bool:
        """Append ``event`` unless its slot is taken; return whether this call wrote it
        (a retry of this very request, its response lost, counts as written)."""
        item = self.event_item(event)
        req = item.req = new_request()

        def own() -> bool:
            try:
                with self.errors("read event"):
                    return self.m.Event.get(event.run_id, event.seq, consistent_read=True).req == req
            except DoesNotExist:
                return False

        return self.conditional("record event", lambda: item.save(condition=self.m.Event.seq.does_not_exist()),
                                own=own)

    def record_outcome(self, run_id: str, pos: int, kind: str, status: str, *, name: str | None = None,
                       data: str | None = None, error: str | None = None, attempt: int | None = None,
                       started_at: float | None = None) -> bool:
        """Record the outcome of op ``pos`` exactly once; False if one was already recorded."""
        return self.record_event(EventRecord(run_id=run_id, seq=event_seq(pos), kind=kind, status=status,
                                             at=self.now(), name=name, data=data, error=error,
                                             attempt=attempt, started_at=started_at))

    def record_event_while_live(self, event: EventRecord) -> bool:
        """Append a record once, only while its run is live (one transaction)."""
        item = self.event_item(event)
        Run = self.m.Run

        def build(tx: Any) -> None:
            tx.save(item, condition=self.m.Event.seq.does_not_exist())
            tx.condition_check(Run, event.run_id, condition=Run.status.is_in(*LIVE_STATUSES))

        return self.transact("record event", build)

    def get_outcome(self, run_id: str, pos: int) -> EventRecord | None:
        """Return the recorded outcome of op ``pos``, if any."""
        try:
            with self.errors("read event"):
                return _event_record(self.m.Event.get(run_id, event_seq(pos), consistent_read=True))
        except DoesNotExist:
            return None

    def get_event(self, run_id: str, seq: int) -> EventRecord | None:
        """Return the history record at ``seq``, if any."""
        try:
            with self.errors("read event"):
                return _event_record(self.m.Event.get(run_id, seq, consistent_read=True))
        except DoesNotExist:
            return None

    def read_history(self, run_id: str, after_seq: int = -1, page_size: int | None = None,
                     until_seq: int | None = None) -> list[EventRecord]:
        """Return the records after ``after_seq`` (up to ``until_seq``) in order, paging to the end."""
        seq = self.m.Event.seq
        key = seq > after_seq if until_seq is None else seq.between(after_seq + 1, until_seq)
        with self.errors("read history"):
            return [_event_record(item) for item in self.m.Event.query(run_id, key, consistent_read=True,
                                                                       page_size=page_size)]

    def record_attempt(self, event: EventRecord, while_live: str | None = None) -> bool:
        """Write a failed-attempt record unless its slot holds this attempt or a later one,
        and (in the same transaction) only while run ``while_live`` (if given) is live.

        Attempts past 998 share the last slot, which so keeps the latest attempt;
        a late or duplicate write never replaces a later attempt. True if written.
        """
        if event.attempt is None:
            raise ValueError("an attempt record needs its attempt number")
        Event, item = self.m.Event, self.event_item(event)
        req = item.req = new_request()
        latest = Event.seq.does_not_exist() | (Event.attempt < event.attempt)

        def own() -> bool:
            try:
                with self.errors("read event"):
                    return Event.get(event.run_id, event.seq, consistent_read=True).req == req  # type: ignore[no-any-return]
            except DoesNotExist:
                return False

        if while_live is None:
            return self.conditional("record attempt", lambda: item.save(condition=latest), own=own)
        Run = self.m.Run

        def build(tx: Any) -> None:
            tx.save(item, condition=latest)
            tx.condition_check(Run, while_live, condition=Run.status.is_in(*LIVE_STATUSES))

        return self.transact("record attempt", build, own=own)

    def schedule_retry(self, retry: TimerRecord, backoff: float) -> bool:
        """Store a failed attempt's retry timer and extend the run's lease over the backoff, in
        one transaction; False (nothing written) if the run has ended."""
        Run = self.m.Run

        def build(tx: Any) -> None:
            tx.save(self.timer_item(retry))
            tx.update(Run(retry.run_id), actions=[
                Run.lease_expires_at.set(self.lease_until(backoff + self.settings.lease_seconds))],
                condition=Run.status.is_in(*LIVE_STATUSES))

        return self.transact("schedule retry", build)
