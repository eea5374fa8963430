"""Workflows of the end-to-end tests of workflow limits and debounced starts: every run logs its
begin and end (wall time) to a file shared by the worker processes."""

from __future__ import annotations

from tests.e2e.flow_limit_flows import note
from workflows import sleep, step, workflow


@step
def gate_note(tag: str, what: str, label: str) -> None:
    note(tag, what, label)


@workflow(concurrency=2, concurrency_key="tag")
def two_runs_at_once(tag: str, label: str) -> str:
    gate_note(tag, "S", label)
    sleep(1)
    gate_note(tag, "E", label)
    return label


@workflow
def debounced_digest(tag: str, items: list[str]) -> list[str]:
    gate_note(tag, "S", ",".join(items))
    return items
