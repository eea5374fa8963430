"""The append-only history: one record per op outcome or failed attempt, written once."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist

from workflows.core.model.records import EventRecord, event_seq
from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.writes.items import event_record

from .base import StoreBase, plain


class HistoryStore(StoreBase):
    """History records keyed by (run id, op position): the key is the dedupe."""

    @aws_actions("dynamodb:GetItem@history")
    def get_outcome(self, run_id: str, pos: int) -> EventRecord | None:
        """Return the recorded outcome of op ``pos``, if any."""
        try:
            with self.errors("read event"):
                return event_record(plain(self.m.Event.get(run_id, event_seq(pos), consistent_read=True)))
        except DoesNotExist:
            return None

    @aws_actions("dynamodb:GetItem@history")
    def get_event(self, run_id: str, seq: int) -> EventRecord | None:
        """Return the history record at ``seq``, if any."""
        try:
            with self.errors("read event"):
                return event_record(plain(self.m.Event.get(run_id, seq, consistent_read=True)))
        except DoesNotExist:
            return None

    @aws_actions("dynamodb:Query@history")
    def read_history(self, run_id: str, after_seq: int = -1, page_size: int | None = None,
                     until_seq: int | None = None) -> list[EventRecord]:
        """Return the records after ``after_seq`` (up to ``until_seq``) in order, paging to the end."""
        seq = self.m.Event.seq
        key = seq > after_seq if until_seq is None else seq.between(after_seq + 1, until_seq)
        with self.errors("read history"):
            return [event_record(plain(item)) for item in self.m.Event.query(run_id, key, consistent_read=True,
                                                                       page_size=page_size)]

