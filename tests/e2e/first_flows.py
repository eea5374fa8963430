"""Workflows of the first-of end-to-end test: a signal, a timer and a step race."""

from __future__ import annotations

import time
from typing import Any

from tests.e2e.flows import bump
from workflows import first_of, signal, step, timer, wait_for_signal, workflow


@step
def e2e_race_work(tag: str, seconds: float) -> float:
    time.sleep(seconds)
    bump(f"{tag}-work")
    return seconds


@workflow
def e2e_race(tag: str, work_seconds: float, timer_seconds: float) -> dict[str, Any]:
    """The first of the signal "go", a timer and a step wins; a signal that lost is taken by the next wait."""
    won = first_of(go=signal("go"), late=timer(timer_seconds), work=e2e_race_work.s(tag, work_seconds))
    out: dict[str, Any] = {"won": won.key, "value": won.value}
    if won.key != "go":
        out["later"] = wait_for_signal("go", timeout=60)
    return out
