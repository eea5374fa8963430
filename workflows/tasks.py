"""Celery as a transport adapter: the resume task and one task per step, on a worker app."""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery

from . import registry, visibility
from .celery_transport import RESUME_TASK, CeleryTransport, fresh_run, step_message, step_task_name
from .core.records import ResumeMessage
from .core.steps import execute_step, run_worker_task
from .runtime import get_engine, use_worker_transport

log = logging.getLogger("workflows.tasks")


def install(celery: Celery) -> CeleryTransport:
    """Register the resume task and every step (present and future) on ``celery``; return
    the worker transport, which the caller makes this process's."""

    keeper = visibility.install(celery, "workflows.")

    @celery.task(name=RESUME_TASK, acks_late=True, bind=True)
    def resume(task: Any, run_id: str, recovering: bool = False, fresh: dict[str, Any] | None = None) -> None:
        engine = get_engine()
        carried = None if fresh is None else fresh_run(run_id, fresh)
        message = ResumeMessage(run_id, recovering=recovering, fresh=carried)
        first = keeper.first_delivery(task.request.id)
        run_worker_task(engine, lambda: engine.receive_resume(message, first_delivery=first))

    transport = CeleryTransport(celery, keeper)

    def register_step(definition: registry.StepDef) -> None:
        name = definition.name

        def run_step(task: Any, run_id: str, pos: int, attempt: int, args: str,
                     branch: dict[str, Any] | None = None, resent: bool = False) -> None:
            engine = get_engine()
            redelivered = resent or not keeper.first_delivery(task.request.id)
            message = step_message(name, run_id, pos, attempt, args, branch, resent)
            run_worker_task(engine, lambda: execute_step(engine, message, redelivered=redelivered))

        run_step.__name__ = run_step.__qualname__ = f"step_{name}"
        celery.task(name=step_task_name(name), acks_late=True, bind=True)(run_step)

    registry.on_step_registered(register_step)
    use_worker_transport(transport)
    return transport


__all__ = ["RESUME_TASK", "install", "step_task_name"]
