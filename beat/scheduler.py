"""Celery beat scheduler backed by DynamoDB: each tick fires due timers and schedules
and recovers runs with expired leases. Safe to run more than once at a time."""

from __future__ import annotations

import logging
from typing import Any

from celery.beat import Scheduler

from workflows.core.sweeper import sweep
from workflows.runtime import get_engine
from workflows.settings import get_settings

from .schedules import fire_due_schedules, sync_declared_schedules

log = logging.getLogger("workflows.beat")


def tick_once() -> dict[str, int]:
    """Do one tick's work: timers, recovery and schedules."""
    engine = get_engine()
    counts = sweep(engine)
    counts["schedules"] = fire_due_schedules(engine)
    return counts


class WorkflowScheduler(Scheduler):
    """``celery beat -S beat.scheduler:WorkflowScheduler`` (what ``workflows beat`` runs)."""

    def setup_schedule(self) -> None:
        self.interval = get_settings().sweep_interval
        try:
            synced = sync_declared_schedules()
            if synced:
                log.info("declared schedules synced: %d", synced)
        except Exception:  # beat must still sweep timers; the next start syncs again
            log.exception("syncing declared schedules failed")

    def tick(self, *args: Any, **kwargs: Any) -> float:
        try:
            counts = tick_once()
            if any(counts.values()):
                log.info("beat tick: %s", counts)
        except Exception:
            log.exception("beat tick failed; retrying next tick")
        return self.interval
