"""A worker consumes the priority levels' queues of each workflow queue it consumes.

``celery -A proj worker -Q steps`` consumes ``steps-high`` and ``steps-low`` too, so a run
started with ``priority="high"`` is never stranded on a queue nobody reads; which level goes
first is the channel's business (``workflows.celery.sqs``). Only the workflow queues get
levels (resumes, steps, each ``queue=`` of a step or workflow): a worker never declares a
level queue of an application queue the deployment did not create.
"""

from __future__ import annotations

import weakref
from typing import Any

from celery import signals

from ..core.model import registry
from ..core.model.priority import queues_of
from .config import RESUME_QUEUE, STEP_QUEUE

_apps: weakref.WeakSet[Any] = weakref.WeakSet()


def workflow_queues() -> set[str]:
    """The queues that have priority levels: resumes, steps, and each step's and workflow's ``queue=``."""
    named = {s.queue for s in registry.steps() if s.queue} | {w.queue for w in registry.workflows() if w.queue}
    return {RESUME_QUEUE, STEP_QUEUE, *named}


def consume_levels(app: Any) -> None:
    """Make a worker of ``app`` consume the level queues of each workflow queue it was told to consume."""
    _apps.add(app)


def add_levels(app: Any) -> list[str]:
    """Add the level queues of the workflow queues ``app`` consumes; return the names added."""
    from kombu import Exchange, Queue

    queues = app.amqp.queues
    consumed, bases = set(queues.consume_from), workflow_queues()
    added = [level for name in sorted(consumed & bases) for level in queues_of(name) if level not in consumed]
    for name in added:
        queues.select_add(Queue(name, Exchange(name, type="direct"), routing_key=name))
    return added


@signals.celeryd_after_setup.connect
def _on_worker_setup(sender: Any = None, instance: Any = None, **_: Any) -> None:
    app = getattr(instance, "app", None)
    if app is not None and app in _apps:
        add_levels(app)
