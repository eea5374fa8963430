"""Declared schedules: ``@workflow(schedule=...)`` kept in step with the schedules table.

Beat syncs them when it starts; ``workflows setup`` syncs them too.
"""

from __future__ import annotations

import logging

from workflows.core.model import registry
from workflows.errors import ScheduleAlreadyExists, WorkflowError
from workflows.options import SchedulePolicy, Timetable
from workflows.runtime import get_engine
from workflows.schedules import new_schedule_record, update_schedule

log = logging.getLogger("workflows.schedules")


def declared_schedule_id(workflow: str) -> str:
    """The id of the schedule ``@workflow(schedule=...)`` declares."""
    return f"declared:{workflow}"


def sync_declared_schedules() -> int:
    """Create or update the schedule of every imported ``@workflow(schedule=...)``.

    The declared schedule of an imported workflow that no longer declares one is
    deleted; a pause set by an operator is kept. Safe to run from several beats.

    Returns:
        How many schedules were created, updated or deleted.
    """
    store, changed = get_engine().store, 0
    definitions = registry.workflows()
    existing = {r.schedule_id: r for r in store.get_schedules([declared_schedule_id(d.name) for d in definitions])}
    for definition in definitions:
        sid = declared_schedule_id(definition.name)
        current = existing.get(sid)
        try:
            if definition.schedule is None:
                if current is not None and current.declared and store.delete_schedule(sid):
                    changed += 1
                continue
            timezone = definition.options.get("schedule_timezone") or "UTC"
            overlap = definition.options.get("schedule_overlap") or "skip"
            wanted = new_schedule_record(definition.name, Timetable(cron=definition.schedule, timezone=timezone),
                                         SchedulePolicy(overlap=overlap), schedule_id=sid)
            wanted.declared = True
            if current is None:
                store.create_schedule(wanted)
            elif (current.spec, current.overlap, current.workflow) != (wanted.spec, wanted.overlap, wanted.workflow):
                update_schedule(sid, cron=definition.schedule, timezone=timezone, overlap=overlap)
            else:
                continue
            changed += 1
        except ScheduleAlreadyExists:
            continue  # another beat created it a moment ago
        except WorkflowError as exc:
            log.error("declared schedule of workflow %r: %s", definition.name, exc)
    return changed
