"""Celery as a transport adapter: one resume task and one task per step."""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import Celery

from . import registry, visibility
from .celery_config import RESUME_QUEUE
from .deadletter import dead_letter
from .engine import get_engine
from .steps import execute_step
from .transport import set_transport

log = logging.getLogger("workflows.tasks")

RESUME_TASK = "workflows.resume"


def step_task_name(step: str) -> str:
    """The stable Celery task name of a step."""
    return f"workflows.step.{step}"


class CeleryTransport:
    """Sends engine messages as Celery tasks."""

    def __init__(self, celery: Celery) -> None:
        self.celery = celery

    def send_step(self, step: str, run_id: str, pos: int, attempt: int, args: str,
                  branch: dict[str, Any] | None = None, queue: str | None = None, *,
                  resent: bool = False) -> None:
        options = {"queue": queue} if queue else {}
        kwargs = {"resent": True} if resent else {}
        self.celery.send_task(step_task_name(step), args=[run_id, pos, attempt, args, branch], kwargs=kwargs,
                              **options)

    def send_resume(self, run_id: str, *, recovering: bool = False) -> None:
        self.celery.send_task(RESUME_TASK, args=[run_id], kwargs={"recovering": recovering}, queue=RESUME_QUEUE)

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        dead_letter(reason, json.dumps(detail, default=str), **detail)


def install(celery: Celery) -> None:
    """Register the resume task and every step (present and future) on ``celery``."""

    @celery.task(name=RESUME_TASK, acks_late=True)
    def resume(run_id: str, recovering: bool = False) -> None:
        get_engine().resume(run_id, recovering=recovering)

    keeper = visibility.install(celery, step_task_name(""))

    def register_step(definition: registry.StepDef) -> None:
        name = definition.name

        def run_step(task: Any, run_id: str, pos: int, attempt: int, args: str,
                     branch: dict[str, Any] | None = None, resent: bool = False) -> None:
            execute_step(get_engine(), name, run_id, pos, attempt, args, branch,
                         redelivered=resent or not keeper.first_delivery(task.request.id))

        run_step.__name__ = run_step.__qualname__ = f"step_{name}"
        celery.task(name=step_task_name(name), acks_late=True, bind=True)(run_step)

    registry.on_step_registered(register_step)
    set_transport(CeleryTransport(celery))
    import beat.schedules  # noqa: F401 - registers the run-end listener of schedules
