"""An SQS-like broker: messages become invisible when received, visible again after the
visibility timeout unless deleted; duplicates and delays are faults the scheduler adds."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Union

from ..core.model.records import ResumeMessage, StepMessage

Message = Union[StepMessage, ResumeMessage]


@dataclasses.dataclass
class Envelope:
    """A queued message and its SQS bookkeeping."""

    id: int
    body: Message
    visible_at: float
    sent_at: float = 0.0
    receives: int = 0
    repeat: bool = False  # the sender's second copy after a lost response (``workflows.celery.repeats``)

    @property
    def run_id(self) -> str:
        return self.body.run_id


class Broker:
    """One queue for everything (every simulated worker consumes every queue)."""

    def __init__(self, visibility_timeout: float) -> None:
        self.visibility_timeout = visibility_timeout
        self.messages: dict[int, Envelope] = {}
        self._ids = itertools.count(1)
        self.changes = 0  # how many messages were sent, deleted or dropped (unchanged: the same messages)
        self._oldest: tuple[int, float | None] | None = None  # (version, the earliest sent_at then)

    def send(self, body: Message, now: float, delay: float = 0.0) -> Envelope:
        envelope = Envelope(next(self._ids), body, now + delay, now)
        self.messages[envelope.id] = envelope
        self.changes += 1
        return envelope

    def visible(self, now: float) -> list[Envelope]:
        return [e for e in self.messages.values() if e.visible_at <= now]

    def receive(self, envelope: Envelope, now: float) -> None:
        envelope.receives += 1
        envelope.visible_at = now + self.visibility_timeout

    def delete(self, envelope: Envelope) -> None:
        if self.messages.pop(envelope.id, None) is not None:
            self.changes += 1

    def expire(self, now: float, retention: float) -> None:
        """Drop the messages older than the queue's retention period (SQS deletes them, received or not)."""
        if self._oldest is None or self._oldest[0] != self.changes:  # (a message's sent_at never changes)
            self._oldest = (self.changes, min((e.sent_at for e in self.messages.values()), default=None))
        if self._oldest[1] is None or self._oldest[1] + retention > now:
            return  # none is that old
        for envelope in [e for e in self.messages.values() if e.sent_at + retention <= now]:
            del self.messages[envelope.id]
            self.changes += 1

    def next_visible(self) -> float | None:
        return min((e.visible_at for e in self.messages.values()), default=None)
