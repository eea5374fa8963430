"""Celery as a transport adapter: the resume task and one task per step, on a worker app.

A step made from an existing task (``step.from_task``) gets no task of its own: the
task's ``run`` is wrapped so that a message carrying the ``workflows_step`` header
runs the durable step, and every other call runs the task's body as before.
"""

from __future__ import annotations

import functools
import logging
import weakref
from typing import Any, Callable

from celery import Celery

from ..core.model import registry
from ..core.model.names import task_identifier
from ..core.model.records import ResumeMessage
from ..core.ops.steps import execute_step, run_worker_task
from ..core.storage.metering import attributed
from ..observe import propagation
from ..observe import worker as observe_worker
from ..runtime import get_engine, use_worker_transport
from . import visibility
from .repeats import possible_repeat
from .task_steps import ORIGINAL_RUN, STEP_HEADER, original_run, real_task
from .transport import RESUME_TASK, CeleryTransport, fresh_run, step_message, step_task_name
from .visibility import VisibilityKeeper

log = logging.getLogger("workflows.tasks")

#: The engine's task options, whatever the app's defaults: late acks, no results, JSON.
TASK_OPTIONS: dict[str, Any] = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True,
                                "serializer": "json", "bind": True}

_installed: weakref.WeakKeyDictionary[Celery, CeleryTransport] = weakref.WeakKeyDictionary()


def install(celery: Celery) -> CeleryTransport:
    """Register the resume task and every step (present and future) on ``celery``; make its
    transport this process's and return it. Installing on one app twice does it once."""
    known = _installed.get(celery)
    if known is not None:
        use_worker_transport(known)
        return known
    keeper = visibility.install(celery, "workflows.", STEP_HEADER)
    observe_worker.install()

    @celery.task(name=RESUME_TASK, **TASK_OPTIONS)
    def resume(task: Any, run_id: str, recovering: bool = False, fresh: dict[str, Any] | None = None) -> None:
        engine = get_engine()
        carried = None if fresh is None else fresh_run(run_id, fresh)
        message = ResumeMessage(run_id, recovering=recovering, fresh=carried)
        first = keeper.first_delivery(task.request.id) and not possible_repeat(task.request)
        with propagation.incoming(getattr(task.request, propagation.HEADER, None)), attributed(run_id):
            run_worker_task(engine, lambda: engine.receive_resume(message, first_delivery=first))

    transport = CeleryTransport(celery, keeper)

    def register_step(definition: registry.StepDef) -> None:
        if definition.task is not None:
            adopt_task(celery, definition.task, keeper)
            return
        name = definition.name

        def run_step(task: Any, run_id: str, pos: int, attempt: int, args: str,
                     branch: dict[str, Any] | None = None, **flags: Any) -> None:
            """A step message: its fields as sent (``flags``: ``resent``, a send that may be a repeat)."""
            run_step_message(keeper, task.request, {"step": name, "run_id": run_id, "pos": pos,
                                                       "attempt": attempt, "args": args, "branch": branch,
                                                       "resent": bool(flags.get("resent"))})

        # Celery compiles a function of this name: it must be an identifier (``billing.charge`` is not).
        run_step.__name__ = run_step.__qualname__ = f"step_{task_identifier(name)}"
        celery.task(name=step_task_name(name), **TASK_OPTIONS)(run_step)

    _installed[celery] = transport
    registry.on_step_registered(register_step)
    use_worker_transport(transport)
    return transport


def run_step_message(keeper: VisibilityKeeper, request: Any, fields: dict[str, Any]) -> None:
    """Run one step message (its fields as sent) in this worker task (``request``: Celery's)."""
    engine = get_engine()
    resent = bool(fields.get("resent")) or possible_repeat(request)  # a copy of one send may have run it
    redelivered = resent or not keeper.first_delivery(request.id)
    message = step_message(fields)
    with propagation.incoming(getattr(request, propagation.HEADER, None)), attributed(message.run_id):
        run_worker_task(engine, lambda: execute_step(engine, message, redelivered=redelivered))


def adopt_task(celery: Celery, task: Any, keeper: VisibilityKeeper) -> None:
    """Let ``task`` (of ``celery``) run step messages; its other calls run its body as before."""
    task = real_task(task)
    if task.app is not celery or getattr(task.run, ORIGINAL_RUN, None) is not None:
        return  # another app's task (its own install adopts it), or adopted already
    own: Callable[..., Any] = original_run(task)

    @functools.wraps(own)
    def run(*args: Any, **kwargs: Any) -> Any:
        fields = getattr(task.request, STEP_HEADER, None)
        if not isinstance(fields, dict):
            return own(*args, **kwargs)
        run_step_message(keeper, task.request, fields)
        return None

    setattr(run, ORIGINAL_RUN, own)
    task.run = run


__all__ = ["RESUME_TASK", "install", "step_task_name"]
