"""Workflows of the inbox tests: a run that takes signals by a wait and by a race, then waits on."""

from __future__ import annotations

from typing import Any

from workflows import first_of, on_update, signal, sleep, timer, wait_for_signal, workflow


@workflow(name="inbox_takes_two")
def takes_two() -> list[Any]:
    notes: list[Any] = []
    sleep("1h")  # no handler yet: an update request waits
    on_update("note", lambda value: notes.append(value) or len(notes))
    first = wait_for_signal("go")
    second = first_of(signal("go"), timer("1h")).value
    wait_for_signal("done")
    return [first, second, notes]
