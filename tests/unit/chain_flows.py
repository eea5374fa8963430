"""A chain of steps that takes update requests, shared by the tests of sent steps' marks and of
the update position race: each step body is counted, and the first body of a step can act."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from workflows import step, workflow
from workflows.core.replay.updates import on_update

#: How many times each step's body ran (by its index in the chain).
BODIES: Counter[int] = Counter()
#: What the first body of step ``i`` does before it returns (another worker's actions meanwhile), by ``i``.
DURING_THE_FIRST_BODY: dict[int, list[Callable[[], None]]] = {}


@step
def chain_add(total: int, i: int) -> int:
    BODIES[i] += 1
    if BODIES[i] == 1:
        for act in DURING_THE_FIRST_BODY.get(i, []):
            act()
    return total + i


@workflow
def chain_with_notes(n: int) -> dict[str, Any]:
    notes: list[str] = []
    on_update("note", lambda value: notes.append(value) or len(notes))
    total = 0
    for i in range(n):
        total = chain_add(total, i)
    return {"total": total, "notes": notes}
