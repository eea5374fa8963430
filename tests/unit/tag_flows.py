"""Workflows the tag tests run (importable by name, as workers load them)."""

from __future__ import annotations

from workflows import continue_as_new, set_tags, sleep, step, workflow


@step
def tag_note(text: str) -> str:
    return text


@workflow
def tag_order(order_id: str) -> dict[str, str]:
    set_tags(stage="started")
    tag_note(order_id)
    sleep("1h")  # every resume after it replays the set_tags above
    return set_tags({"stage": "paid", "customer": None}, order=order_id)


@workflow
def tag_rounds(n: int) -> int:
    set_tags(round=str(n))
    if n < 2:
        continue_as_new(n + 1)
    return n


@workflow
def tag_bad(value: object) -> None:
    set_tags(stage=value)  # type: ignore[arg-type]
