"""A transport that keeps the messages it is asked to send."""

from __future__ import annotations

from typing import Any

from ..core.model.records import ResumeMessage, StepMessage


class RecordingTransport:
    """Records every message in send order; ``local_queues`` are the queues "this process" consumes."""

    def __init__(self, local_queues: set[str | None] | None = None) -> None:
        self.local_queues = local_queues or set()
        self.steps: list[StepMessage] = []
        self.resumes: list[ResumeMessage] = []
        self.dead_letters: list[tuple[str, dict[str, Any]]] = []

    def send_step(self, message: StepMessage) -> None:
        self.steps.append(message)

    def send_steps(self, messages: list[StepMessage]) -> None:
        for message in messages:
            self.send_step(message)

    def send_resume(self, message: ResumeMessage) -> None:
        self.resumes.append(message)

    def runs_here(self, step: str, queue: str | None) -> bool:
        return queue in self.local_queues

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        self.dead_letters.append((reason, detail))

    def clear(self) -> None:
        """Forget every message recorded so far."""
        self.steps.clear()
        self.resumes.clear()
        self.dead_letters.clear()
