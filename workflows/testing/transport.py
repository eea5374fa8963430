"""The kit's transport: messages queue in send order until the kit delivers them, higher
priorities first (as a worker serves its queues under a backlog: ``workflows.core.model.priority``)."""

from __future__ import annotations

from collections import deque
from typing import Any, Union

from ..core.model.priority import LEVELS, NORMAL
from ..core.model.records import ResumeMessage, StepMessage

Message = Union[StepMessage, ResumeMessage]


class QueueTransport:
    """One in-process queue per priority level. Every queue "runs here", as for a
    ``workflows worker`` that consumes them all, so a run's next step runs in place.

    Attributes:
        sent: every message sent, in send order (a test reads each one's ``priority`` here).
    """

    def __init__(self) -> None:
        self.levels: dict[str, deque[Message]] = {level: deque() for level in LEVELS}
        self.sent: list[Message] = []
        self.dead_letters: list[tuple[str, dict[str, Any]]] = []

    @property
    def queue(self) -> list[Message]:
        """The queued messages, in the order they will be delivered."""
        return [message for level in LEVELS for message in self.levels[level]]

    def send_step(self, message: StepMessage) -> None:
        self._put(message)

    def send_steps(self, messages: list[StepMessage]) -> None:
        for message in messages:
            self.send_step(message)

    def send_resume(self, message: ResumeMessage) -> None:
        self._put(message)

    def _put(self, message: Message) -> None:
        self.sent.append(message)
        self.levels[message.priority or NORMAL].append(message)

    def runs_here(self, step: str, queue: str | None) -> bool:
        return True

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        self.dead_letters.append((reason, detail))

    def take(self) -> Message | None:
        """The oldest queued message of the highest level, or None."""
        return next((self.levels[level].popleft() for level in LEVELS if self.levels[level]), None)
