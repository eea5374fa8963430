"""The Celery app: ``celery -A workflows.app worker`` or ``workflows worker``."""

from __future__ import annotations

from celery import Celery
from kombu import Exchange, Queue

from ..core.model import registry
from ..core.model.priority import with_levels
from ..settings import get_settings
from .config import RESUME_QUEUE, STEP_QUEUE, celery_config
from .deadletter import DeadLetterConsumer
from .levels import consume_levels


def worker_queues() -> list[str]:
    """Every queue a worker consumes by default: resumes, steps, and each step's ``queue=``, each with
    its priority levels' queues (``<queue>-high``, ``<queue>-low``: ``workflows.core.model.priority``)."""
    named = [s.queue for s in registry.steps() if s.queue] + [w.queue for w in registry.workflows() if w.queue]
    return with_levels([RESUME_QUEUE, STEP_QUEUE, *named])


def create_app() -> Celery:
    """Build the app from the workflows configuration and register the engine's tasks."""
    celery = Celery("workflows")
    celery.add_defaults(lambda: celery_config(get_settings()))  # read lazily, when the app is first used
    celery.conf.worker_consumer = DeadLetterConsumer
    registry.load_imports(get_settings().imports)
    from .tasks import install

    install(celery)
    consume_levels(celery)  # `workflows worker -Q steps` consumes steps-high and steps-low too
    # One direct exchange per queue, so a message reaches exactly the queue it names.
    celery.conf.task_queues = [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in worker_queues()]
    return celery


app = create_app()
