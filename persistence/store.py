"""The store: every read and write of workflow state, in domain terms."""

from __future__ import annotations

import time
from typing import Any, Callable

from workflows.core.records import EventRecord, HookRecord, TimerRecord, event_seq
from workflows.errors import StorageError
from workflows.settings import Settings, get_settings

from .base import LIVE_STATUSES
from .blobs import S3Blobs
from .flow import FlowStore
from .history import HistoryStore
from .hooks import HookStore
from .joins import JoinStore
from .plans import PlanStore
from .retention import RetentionStore
from .runs import RunStore
from .schedules import ScheduleStore
from .sessions import SessionStore
from .signals import SignalStore
from .tags import TagStore
from .timers import TimerStore
from .versions import VersionStore


class DynamoStore(VersionStore, RunStore, HistoryStore, TimerStore, HookStore, SignalStore, JoinStore, TagStore,
                  RetentionStore, ScheduleStore, FlowStore, SessionStore, PlanStore):
    """DynamoDB-backed state of runs, history, timers, hooks, signals, joins, tags, schedules and flow control."""

    def __init__(self, settings: Settings | None = None, clock: Callable[[], float] = time.time) -> None:
        super().__init__(settings or get_settings(), clock)
        self.blobs = S3Blobs(self.settings)  # the Blobs port: large payloads in the payload bucket

    def create_hook(self, hook: HookRecord, timer: TimerRecord | None, run_id: str, pos: int,
                    data: str) -> EventRecord | None:
        """Store a hook, its expiry timer and the op's outcome in one transaction, while the
        run is live (nothing is written after its end).

        Returns the recorded outcome: this call's, or the one a concurrent replay wrote;
        None if the run has ended.
        """
        event = EventRecord(run_id=run_id, seq=event_seq(pos), kind="hook", status="created", at=self.now(),
                            name=hook.name, data=data)
        Run = self.m.Run

        def build(tx: Any) -> None:
            tx.save(self.hook_item(hook), condition=self.m.Hook.token_hash.does_not_exist())
            if timer is not None:
                tx.save(self.timer_item(timer))
            tx.save(self.event_item(event), condition=self.m.Event.seq.does_not_exist())
            tx.condition_check(Run, run_id, condition=Run.status.is_in(*LIVE_STATUSES))

        if not self.transact("create hook", build):
            existing = self.get_outcome(run_id, pos)
            if existing is None:
                run = self.find_run(run_id)
                if run is None or run.is_terminal:
                    return None
                raise StorageError(f"hook of run {run_id} at {pos} could not be created")
            return existing
        return event


_stores: dict[Settings, DynamoStore] = {}


def get_store(settings: Settings | None = None) -> DynamoStore:
    """Return the shared store of ``settings`` (the active settings by default)."""
    settings = settings or get_settings()
    store = _stores.get(settings)
    if store is None:
        store = _stores[settings] = DynamoStore(settings)
    return store
