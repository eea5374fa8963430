"""Workflows started by schedules in the tests; workers and beat import this module by name."""

from __future__ import annotations

from tests.e2e.flows import bump
from workflows import continue_as_new, sleep, step, workflow


@step
def count_fire(tag: str) -> int:
    """Count one execution of a scheduled run (a file shared by every worker process)."""
    return bump(tag)


@workflow
def scheduled_tick(tag: str) -> int:
    """A quick scheduled run: one step."""
    return count_fire(tag)


@workflow
def scheduled_slow(tag: str, seconds: float) -> str:
    """A slow scheduled run: a step, then a durable sleep (a cancel ends it at once)."""
    count_fire(tag)
    sleep(seconds)
    return "done"


@workflow
def scheduled_chain(tag: str, left: int) -> int:
    """Continues as new ``left`` times: one running run of its schedule all along."""
    count_fire(tag)
    if left > 0:
        continue_as_new(tag, left - 1)
    return left


@workflow(schedule="0 0 1 1 *", schedule_timezone="Europe/Paris", schedule_overlap="buffer_one")
def new_year_report() -> str:
    """Declared schedule: created by ``workflows init-aws`` and at beat start."""
    return "happy new year"
