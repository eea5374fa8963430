"""Celery as a transport adapter: one resume task and one task per step."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from celery import Celery, signals

from persistence import RunRecord

from . import in_place, registry, visibility
from .celery_config import RESUME_QUEUE
from .deadletter import dead_letter
from .engine import get_engine
from .steps import execute_step, run_worker_task
from .transport import set_transport

log = logging.getLogger("workflows.tasks")

RESUME_TASK = "workflows.resume"
#: A first resume message carries its run (no read needed) when the arguments are this small.
FRESH_ARGS_LIMIT = 32 * 1024


def step_task_name(step: str) -> str:
    """The stable Celery task name of a step."""
    return f"workflows.step.{step}"


class CeleryTransport:
    """Sends engine messages as Celery tasks."""

    def __init__(self, celery: Celery, keeper: visibility.VisibilityKeeper | None = None) -> None:
        self.celery, self.keeper = celery, keeper

    def send_step(self, step: str, run_id: str, pos: int, attempt: int, args: str,
                  branch: dict[str, Any] | None = None, queue: str | None = None, *,
                  resent: bool = False) -> None:
        options = {"queue": queue} if queue else {}
        kwargs = {"resent": True} if resent else {}
        self.celery.send_task(step_task_name(step), args=[run_id, pos, attempt, args, branch], kwargs=kwargs,
                              **options)

    def send_resume(self, run_id: str, *, recovering: bool = False, fresh: RunRecord | None = None) -> None:
        kwargs: dict[str, Any] = {"recovering": recovering}
        if fresh is not None and len(fresh.args) <= FRESH_ARGS_LIMIT:
            kwargs["fresh"] = {k: v for k, v in dataclasses.asdict(fresh).items() if v is not None}
        self.celery.send_task(RESUME_TASK, args=[run_id], kwargs=kwargs, queue=RESUME_QUEUE)

    def runs_here(self, step: str, queue: str | None) -> bool:
        if self.keeper is None or self.keeper.stopping:
            return False
        if queue is None:
            queue = self.celery.amqp.router.route({}, step_task_name(step))["queue"].name
        return queue in self.celery.amqp.queues.consume_from

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        dead_letter(reason, json.dumps(detail, default=str), **detail)


def fresh_run(run_id: str, fields: dict[str, Any]) -> RunRecord | None:
    """The run a first resume message carries, or None if it is not a run of ``run_id``."""
    known = {f.name for f in dataclasses.fields(RunRecord)}
    try:
        run = RunRecord(**{k: v for k, v in fields.items() if k in known})
    except TypeError:
        return None
    return run if run.run_id == run_id and run.status == "pending" else None


def install(celery: Celery) -> None:
    """Register the resume task and every step (present and future) on ``celery``."""

    keeper = visibility.install(celery, "workflows.")

    @celery.task(name=RESUME_TASK, acks_late=True, bind=True)
    def resume(task: Any, run_id: str, recovering: bool = False, fresh: dict[str, Any] | None = None) -> None:
        engine = get_engine()
        run = None
        if fresh is not None and not recovering and keeper.first_delivery(task.request.id):
            run = fresh_run(run_id, fresh)
        # A fresh run on its first delivery has no history yet: nothing to read.
        known_through = -1 if run is not None else None
        run_worker_task(engine, lambda: engine.resume(run_id, recovering=recovering, run=run,
                                                      known_through=known_through))
    transport = CeleryTransport(celery, keeper)

    @signals.worker_shutting_down.connect(weak=False)
    def send_steps_running_in_place(**_: Any) -> None:
        for local in in_place.running_steps():
            transport.send_step(local.step, local.run.run_id, local.pos, local.attempt, local.args,
                                queue=local.queue, resent=True)

    def register_step(definition: registry.StepDef) -> None:
        name = definition.name

        def run_step(task: Any, run_id: str, pos: int, attempt: int, args: str,
                     branch: dict[str, Any] | None = None, resent: bool = False) -> None:
            engine = get_engine()
            redelivered = resent or not keeper.first_delivery(task.request.id)
            run_worker_task(engine, lambda: execute_step(engine, name, run_id, pos, attempt, args, branch,
                                                         redelivered=redelivered))

        run_step.__name__ = run_step.__qualname__ = f"step_{name}"
        celery.task(name=step_task_name(name), acks_late=True, bind=True)(run_step)

    registry.on_step_registered(register_step)
    set_transport(transport)
    import beat.schedules  # noqa: F401 - registers the run-end listener of schedules
