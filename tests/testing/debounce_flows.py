"""Workflows of the debounce tests."""

from __future__ import annotations

from workflows import step, workflow
from workflows.core.execution.attempts import current_step

#: (user, batch, virtual time) of every run's step (tests clear it).
SENT: list[tuple[str, list[str], float]] = []


@step
def send_digest(user: str, items: list[str]) -> None:
    info = current_step()
    assert info is not None
    SENT.append((user, items, info.engine.now()))


@workflow
def digest(user: str, items: list[str]) -> list[str]:
    send_digest(user, items)
    return items
