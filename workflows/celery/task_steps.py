"""Existing Celery tasks as durable steps: ``step.from_task(charge_card)`` or ``@step`` on the task.

The task is not rewritten. Its body becomes the step's function; a step message goes
out under the task's own name and is routed like the task (its ``queue`` option, then
the app's ``task_routes``), so Celery-side tooling sees the task names it knows. The
message carries the step (run id, position, attempt, encoded arguments) in the header
``workflows_step`` and no Celery arguments. ``workflows.install(app)`` lets the app's
workers tell such a message from an ordinary call of the task (see ``tasks``).
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.model import registry
from ..decorators import Step, is_celery_task, step_definition
from ..errors import RegistrationError

#: The message header that makes a call of a task a step message.
STEP_HEADER = "workflows_step"
#: Set on the ``run`` a worker installed over a task's own: the task's own ``run``.
ORIGINAL_RUN = "__workflows_original_run__"


def real_task(task: Any) -> Any:
    """The task object behind Celery's lazy proxy (``@app.task`` before the app is finalized)."""
    getter = getattr(task, "_get_current_object", None)
    return getter() if callable(getter) else task


def original_run(task: Any) -> Callable[..., Any]:
    """The task's own body (bound to the task when it was declared with ``bind=True``)."""
    run = task.run
    return getattr(run, ORIGINAL_RUN, run)  # type: ignore[no-any-return]


class TaskStep(Step[..., Any]):
    """A step made from a Celery task; every other attribute (``delay``, ``apply_async``...) is the task's."""

    def __init__(self, definition: registry.StepDef) -> None:
        super().__init__(definition)
        self.task = definition.task

    def __getattr__(self, name: str) -> Any:
        if name == "task" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.task, name)

    def __repr__(self) -> str:
        return f"<step {self.name} (task {self.task.name})>"


def from_task(task: Any, **options: Any) -> TaskStep:
    """Register the Celery task ``task`` as a durable step; see ``StepDecorator.from_task``.

    Raises:
        RegistrationError: ``task`` is not a Celery task, or an option is invalid.
    """
    if isinstance(task, TaskStep):
        task = task.task
    if not is_celery_task(task):
        raise RegistrationError(f"step.from_task needs a Celery task (made by @app.task), got {task!r}")
    task = real_task(task)
    options.setdefault("name", task.name)
    queue = getattr(task, "queue", None)
    if queue and "queue" not in options:
        options["queue"] = queue
    definition = step_definition(original_run(task), options, task=task)
    registry.add_step(definition)
    return TaskStep(definition)
