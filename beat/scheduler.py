"""Celery beat scheduler backed by DynamoDB: each tick fires due timers and schedules
and recovers runs with expired leases. Safe to run more than once at a time."""

from __future__ import annotations

import logging
from typing import Any

from celery.beat import Scheduler

from workflows.engine import get_engine
from workflows.settings import get_settings
from workflows.sweeper import sweep

log = logging.getLogger("workflows.beat")


def tick_once() -> dict[str, int]:
    """Do one tick's work: timers, recovery and (when loaded) schedules."""
    engine = get_engine()
    counts = sweep(engine)
    try:
        from .schedules import fire_due_schedules
    except ImportError:  # schedules not installed in this build
        return counts
    counts["schedules"] = fire_due_schedules(engine)
    return counts


class WorkflowScheduler(Scheduler):
    """``celery beat -S beat.scheduler:WorkflowScheduler`` (what ``workflows beat`` runs)."""

    def setup_schedule(self) -> None:
        self.interval = get_settings().sweep_interval
        try:
            from .schedules import sync_declared_schedules

            sync_declared_schedules()
        except ImportError:
            pass

    def tick(self, *args: Any, **kwargs: Any) -> float:
        try:
            counts = tick_once()
            if any(counts.values()):
                log.info("beat tick: %s", counts)
        except Exception:
            log.exception("beat tick failed; retrying next tick")
        return self.interval
