"""Celery beat scheduler backed by DynamoDB: each tick fires due timers and schedules
and recovers runs with expired leases. Safe to run more than once at a time."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.beat import Scheduler

from workflows.batches import drive_due_batches
from workflows.core.background.firing import fire_due_schedules
from workflows.core.background.sweeper import fire_due_timers, reconcile
from workflows.core.storage.retention import sweep_retention
from workflows.runtime import get_engine
from workflows.settings import get_settings

from .declared import sync_declared_schedules

log = logging.getLogger("workflows.beat")


#: Retention is not urgent: beat reads its index at most this often (at least every tick's interval).
RETENTION_PERIOD = 2.0
_last_retention = 0.0


def tick_once() -> dict[str, int]:
    """Do one tick's work: timers, recovery, schedules, a chunk of each due batch (within half a
    sweep interval), then (at most every ``RETENTION_PERIOD`` seconds) as much retention stamping
    as half that period allows; the rest waits."""
    global _last_retention
    engine = get_engine()
    counts = {"timers": fire_due_timers(engine), "recovered": reconcile(engine)}
    counts["schedules"] = fire_due_schedules(engine)
    counts["batches"] = drive_due_batches(engine, budget=engine.settings.sweep_interval / 2)
    period = max(engine.settings.sweep_interval, RETENTION_PERIOD)
    if time.monotonic() - _last_retention >= period:
        _last_retention = time.monotonic()
        counts.update(sweep_retention(engine, budget=period / 2))
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
