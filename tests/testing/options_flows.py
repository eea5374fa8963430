"""Workflows of the start-options tests: one with a parameter named like a start option."""

from __future__ import annotations

from workflows import step, workflow


@step(name="options_label")
def label(tags: list[str]) -> str:
    return ",".join(tags)


@workflow(name="options_tagged_gift")
def tagged_gift(order_id: str, tags: list[str]) -> str:
    """Its ``tags`` parameter is the workflow's own (a list), not the run's search tags."""
    return f"{order_id}:{label(tags)}"


@workflow(name="options_plain")
def plain(n: int) -> int:
    return n + 1
