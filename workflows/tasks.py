"""Celery as a transport adapter: one resume task and one task per step."""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import Celery, signals

from . import in_place, registry, visibility
from .celery_config import RESUME_QUEUE
from .deadletter import dead_letter
from .engine import get_engine
from .steps import execute_step, run_worker_task
from .transport import set_transport

log = logging.getLogger("workflows.tasks")

RESUME_TASK = "workflows.resume"


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

    def send_resume(self, run_id: str, *, recovering: bool = False) -> None:
        self.celery.send_task(RESUME_TASK, args=[run_id], kwargs={"recovering": recovering}, queue=RESUME_QUEUE)

    def runs_here(self, step: str, queue: str | None) -> bool:
        if self.keeper is None or self.keeper.stopping:
            return False
        if queue is None:
            queue = self.celery.amqp.router.route({}, step_task_name(step))["queue"].name
        return queue in self.celery.amqp.queues.consume_from

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        dead_letter(reason, json.dumps(detail, default=str), **detail)


def install(celery: Celery) -> None:
    """Register the resume task and every step (present and future) on ``celery``."""

    @celery.task(name=RESUME_TASK, acks_late=True)
    def resume(run_id: str, recovering: bool = False) -> None:
        engine = get_engine()
        run_worker_task(engine, lambda: engine.resume(run_id, recovering=recovering))

    keeper = visibility.install(celery, "workflows.")
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
