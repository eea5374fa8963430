"""A schedule in a scenario: beats fire it through the real beat code, under one of the
overlap policies, and its runs overlap (each sleeps longer than the interval).

Checked after every event: the policies that allow one run at a time never have two
live. At the end: every fire of the window was acted on, nothing is left buffered or
claimed, and the runs started are as many as the policy allows.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from beat.cron import ScheduleSpec
from workflows.core.background.firing import next_after

from ..core.model.records import TERMINAL, ScheduleRecord
from ..core.model.states import RunStatus

if TYPE_CHECKING:
    from .world import World

OVERLAPS = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all")
INTERVAL, FIRES, RUN_SLEEP = 30.0, 8, 45.0  # each run sleeps longer than the interval: runs overlap
ONE_AT_A_TIME = frozenset({"skip", "buffer_one", "buffer_all"})
EVERY_FIRE_RUNS = frozenset({"buffer_all", "allow_all"})


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def create(world: World, rng: random.Random, start: float) -> ScheduleRecord:
    """Store a schedule of ``FIRES`` fires, ``INTERVAL`` apart, under a drawn overlap policy."""
    spec = ScheduleSpec.build(every=INTERVAL, start_at=_at(start + 5), end_at=_at(start + 5 + INTERVAL * (FIRES - 1)))
    sid = f"sched-{world.seed}"
    record = ScheduleRecord(schedule_id=sid, workflow="sim_sleep", spec=spec.to_dict(), overlap=rng.choice(OVERLAPS),
                            args=json.dumps([[RUN_SLEEP], {}]), catchup_window=3600.0, created_at=start,
                            updated_at=start)
    record.next_fire_at, record.next_due_at = next_after(spec, sid, start)
    return world.store.create_schedule(record)


def _runs(world: World, schedule_id: str) -> list[dict[str, Any]]:
    """The runs a schedule started, those TTL deleted since they ended included."""
    stored = {r["run_id"]: r for r in world.store.runs.items.values() if r.get("schedule_id") == schedule_id}
    deleted = {i: r for i, r in world.decay.runs.items() if r.get("schedule_id") == schedule_id and i not in stored}
    return [*stored.values(), *deleted.values()]


def check_overlap(world: World, record: ScheduleRecord) -> None:
    """After every event: a one-at-a-time policy never has two live runs."""
    if record.overlap not in ONE_AT_A_TIME:
        return
    version = getattr(world.store.runs.items, "version", None)  # the runs unchanged: nothing new to find
    if version is not None and version == world.overlap_checked:
        return
    world.overlap_checked = version
    live = [r["run_id"] for r in _runs(world, record.schedule_id) if r["status"] not in TERMINAL]
    if len(live) > 1:
        world.violations.append(f"schedule {record.schedule_id} ({record.overlap}) has {len(live)} live runs: {live}")


def finished(world: World, record: ScheduleRecord) -> bool:
    """Every fire acted on, nothing buffered or claimed, every run ended."""
    stored = world.store.find_schedule(record.schedule_id)
    return (stored is not None and stored.next_fire_at is None and stored.pending is None and not stored.buffered
            and all(r["status"] in TERMINAL for r in _runs(world, record.schedule_id)))


def check_end(world: World, record: ScheduleRecord) -> None:
    """The runs started are as many as the policy allows; each ended as it may."""
    runs = _runs(world, record.schedule_id)
    low = FIRES if record.overlap in EVERY_FIRE_RUNS else 1
    if not low <= len(runs) <= FIRES:
        world.violations.append(f"schedule {record.schedule_id} ({record.overlap}) started {len(runs)} runs "
                                f"for {FIRES} fires")
    cancels = record.overlap in ("cancel_other", "terminate_other")
    for run in runs:
        ended_well = run["status"] == RunStatus.COMPLETED and run.get("result") == "2"
        if not (ended_well or (cancels and run["status"] == RunStatus.CANCELLED)):
            world.violations.append(f"scheduled run {run['run_id']} ended {run['status']} ({run.get('error')})")
