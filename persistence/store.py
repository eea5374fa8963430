"""The store: every read and write of workflow state, in domain terms."""

from __future__ import annotations

import time
from typing import Callable

from workflows.core.storage.writes import Writes
from workflows.settings import Settings, get_settings

from .blobs import S3Blobs
from .history import HistoryStore
from .hooks import HookStore
from .plans import PlanStore
from .retention import RetentionStore
from .runs import RunStore
from .schedules import ScheduleStore
from .signals import SignalStore
from .tags import TagStore
from .timers import TimerStore
from .versions import VersionStore


class DynamoStore(VersionStore, RunStore, HistoryStore, TimerStore, HookStore, SignalStore, TagStore,
                  RetentionStore, ScheduleStore, PlanStore, Writes):
    """DynamoDB-backed state of runs, history, timers, hooks, signals, joins, tags, schedules and flow control."""

    def __init__(self, settings: Settings | None = None, clock: Callable[[], float] = time.time) -> None:
        super().__init__(settings or get_settings(), clock)
        self.blobs = S3Blobs(self.settings)  # the Blobs port: large payloads in the payload bucket

_stores: dict[Settings, DynamoStore] = {}


def get_store(settings: Settings | None = None) -> DynamoStore:
    """Return the shared store of ``settings`` (the active settings by default)."""
    settings = settings or get_settings()
    store = _stores.get(settings)
    if store is None:
        store = _stores[settings] = DynamoStore(settings)
    return store
