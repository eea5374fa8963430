"""Workflows of the workflow-limit tests: runs limited to N at once (per key)."""

from __future__ import annotations

from workflows import continue_as_new, sleep, step, workflow
from workflows.core.execution.attempts import current_step

#: (event, label, virtual time): "began" and "ended" of every limited run (tests clear it).
EVENTS: list[tuple[str, str, float]] = []


@step
def mark(event: str, label: str) -> None:
    info = current_step()
    assert info is not None
    EVENTS.append((event, label, info.engine.now()))


@workflow(concurrency=2)
def two_at_a_time(label: str) -> str:
    mark("began", label)
    sleep("10s")
    mark("ended", label)
    return label


@workflow(concurrency=1, concurrency_key="customer")
def one_per_customer(customer: str, label: str) -> str:
    mark("began", label)
    sleep("10s")
    mark("ended", label)
    return label


@workflow(concurrency=1)
def one_chain(label: str, rounds: int) -> str:
    mark("began", f"{label}{rounds}")
    sleep("5s")
    mark("ended", f"{label}{rounds}")
    if rounds > 1:
        continue_as_new(label, rounds - 1)
    return label


@workflow(concurrency=1)
def one_debounced(label: str) -> str:
    mark("began", label)
    sleep("10s")
    mark("ended", label)
    return label
