"""The writes of ``set_event`` and ``write_stream``: the op's record and its item for clients, in one transaction."""

from __future__ import annotations

from ...model.records import EventRecord
from ..plans import A, Check, Put, plan
from .base import LIVE_COND, WritesBase


class EventWrites(WritesBase):
    """``set_event`` and ``write_stream`` (see the EventStore port)."""

    def set_event(self, event: EventRecord, latest: EventRecord) -> bool:
        """Record a ``set_event`` outcome and put the key's latest value, in one transaction while
        the run is live; False if the outcome slot is taken or the run has ended."""
        return self.commit(plan("set event", Put("history", self.event_item(event), A("seq").missing()),
                                Put("history", {**self.event_item(latest), "pos": event.pos}),
                                Check("runs", (event.run_id,), LIVE_COND))).applied

    def write_stream(self, event: EventRecord, entry: EventRecord) -> bool:
        """Record a ``write_stream`` outcome and put its stream entry, in one transaction while the
        run is live; False if the outcome slot (or the entry's) is taken or the run has ended."""
        return self.commit(plan("write stream", Put("history", self.event_item(event), A("seq").missing()),
                                Put("history", {**self.event_item(entry), "pos": event.pos}, A("seq").missing()),
                                Check("runs", (event.run_id,), LIVE_COND))).applied
