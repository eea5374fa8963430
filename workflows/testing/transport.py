"""The kit's transport: messages queue in send order until the kit delivers them."""

from __future__ import annotations

from collections import deque
from typing import Any, Union

from ..core.records import ResumeMessage, StepMessage

Message = Union[StepMessage, ResumeMessage]


class QueueTransport:
    """One in-process queue for every message. Every queue "runs here", as for a
    ``workflows worker`` that consumes them all, so a run's next step runs in place."""

    def __init__(self) -> None:
        self.queue: deque[Message] = deque()
        self.dead_letters: list[tuple[str, dict[str, Any]]] = []

    def send_step(self, message: StepMessage) -> None:
        self.queue.append(message)

    def send_resume(self, message: ResumeMessage) -> None:
        self.queue.append(message)

    def runs_here(self, step: str, queue: str | None) -> bool:
        return True

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        self.dead_letters.append((reason, detail))

    def take(self) -> Message | None:
        """The oldest queued message, or None."""
        return self.queue.popleft() if self.queue else None
