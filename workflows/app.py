"""The Celery app: ``celery -A workflows.app worker`` or ``workflows worker``."""

from __future__ import annotations

from celery import Celery
from kombu import Exchange, Queue

from . import registry
from .celery_config import RESUME_QUEUE, STEP_QUEUE
from .settings import get_settings


def worker_queues() -> list[str]:
    """Every queue a worker consumes by default: resumes, steps, and each step's ``queue=``."""
    named = [s.queue for s in registry.steps() if s.queue] + [w.queue for w in registry.workflows() if w.queue]
    return list(dict.fromkeys([RESUME_QUEUE, STEP_QUEUE, *named]))


def create_app() -> Celery:
    """Build the app from ``celeryconfig`` and register the engine's tasks."""
    celery = Celery("workflows")
    celery.config_from_object("workflows.celeryconfig")  # read lazily, when the app is first used
    registry.load_imports(get_settings().imports)
    from .tasks import install

    install(celery)
    # One direct exchange per queue, so a message reaches exactly the queue it names.
    celery.conf.task_queues = [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in worker_queues()]
    return celery


app = create_app()
