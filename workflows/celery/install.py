"""Install workflows into an existing Celery app: ``workflows.install(app)``.

One explicit call in the module that builds the app (``proj/celery.py``), after the
app is configured. It checks the app's settings against the workflows settings
(:func:`check_app`), adds the engine's queues (and their priority levels' queues) to
``task_queues``, registers the engine's tasks (``workflows.resume``, ``workflows.step.*``), lets tasks made into steps
(``step.from_task``) run step messages, and makes the app this process's transport, so
``start()`` in a web process or a task reuses the app's broker connection.
``celery -A proj worker`` then runs the app's tasks and workflow steps side by side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.model import registry
from ..core.model.priority import queues_of
from ..errors import ConfigurationError
from ..settings import Settings, get_settings
from .config import RESUME_QUEUE, STEP_QUEUE
from .levels import consume_levels

if TYPE_CHECKING:
    from celery import Celery

DEFAULT_CONSUMER = "celery.worker.consumer:Consumer"


def install(app: Celery) -> Celery:
    """Install the workflow engine into ``app`` and return it.

    Raises:
        ConfigurationError: a setting of ``app`` conflicts with workflows (see :func:`check_app`).
    """
    from .tasks import install as install_tasks

    check_app(app, get_settings())
    for name in (RESUME_QUEUE, STEP_QUEUE):
        add_levels_of(app, name)
    consume_levels(app)  # a worker given -Q consumes the levels of the workflow queues it names
    if app.conf.worker_consumer in (None, DEFAULT_CONSUMER):
        from .deadletter import DeadLetterConsumer

        app.conf.worker_consumer = DeadLetterConsumer
    install_tasks(app)
    registry.on_step_registered(lambda step: add_levels_of(app, step.queue) if step.queue and step.task is None
                                else None)
    return app


def check_app(app: Celery, settings: Settings) -> None:
    """Check that ``app`` can carry workflow messages.

    The broker must be SQS, in the region and with the queue name prefix of the
    workflows settings (``AWS_DEFAULT_REGION``, ``WORKFLOWS_QUEUE_PREFIX``), so that
    every process (workers, beat, a web process) finds the same queues; the app must
    accept JSON messages and use Celery's message protocol 2. The app's own
    serializer may be anything: workflow messages are always sent as JSON.

    Raises:
        ConfigurationError: naming every conflict found and how to resolve it.
    """
    from kombu.transport.SQS import Transport as SQSTransport

    problems: list[str] = []
    conf = app.conf
    connection = app.connection_for_write()
    try:
        transport: Any = connection.transport
        options = dict(connection.transport_options or {})
    finally:
        connection.release()
    if not isinstance(transport, SQSTransport):
        problems.append(f"the broker is {type(transport).__module__}, not SQS: workflow messages need an SQS "
                        "broker (broker_url = 'sqs://...')")
    else:
        prefix = options.get("queue_name_prefix", "")
        if prefix != settings.queue_prefix:
            problems.append(f"broker_transport_options queue_name_prefix is {prefix!r} but WORKFLOWS_QUEUE_PREFIX is "
                            f"{settings.queue_prefix!r}: make them the same")
        region = options.get("region")
        if region and region != settings.region:
            problems.append(f"broker_transport_options region is {region!r} but the workflows region "
                            f"(AWS_DEFAULT_REGION) is {settings.region!r}: make them the same")
    accepted = {str(c).lower() for c in (conf.accept_content or [])}
    if not accepted & {"json", "application/json"}:
        problems.append(f"accept_content is {sorted(accepted)}: add 'json' (workflow messages are JSON)")
    if int(conf.task_protocol or 2) < 2:
        problems.append(f"task_protocol is {conf.task_protocol}: workflows needs message protocol 2")
    if problems:
        raise ConfigurationError(f"cannot install workflows into Celery app {app.main!r}: " + "; ".join(problems))


def add_levels_of(app: Celery, name: str) -> None:
    """Declare queue ``name`` and its priority levels' queues on ``app`` (see :func:`add_queue`)."""
    for level in queues_of(name):
        add_queue(app, level)


def add_queue(app: Celery, name: str) -> None:
    """Declare queue ``name`` on ``app`` (a direct exchange of its own), so that a worker
    started without ``-Q`` consumes it; a worker given ``-Q`` consumes what it is told."""
    from kombu import Exchange, Queue

    queue = Queue(name, Exchange(name, type="direct"), routing_key=name)
    built = app.amqp.__dict__.get("queues")  # the app's queues, once Celery has built them
    if built is not None:
        if name not in built:
            built.add(queue)
        return
    conf = app.conf
    declared = list(conf.task_queues or [default_queue(app)])
    if name not in {q.name for q in declared}:
        conf.task_queues = [*declared, queue]


def default_queue(app: Celery) -> Any:
    """The queue Celery would consume when ``task_queues`` is not set."""
    from kombu import Exchange, Queue

    conf = app.conf
    name = conf.task_default_queue
    exchange = Exchange(conf.task_default_exchange or name, conf.task_default_exchange_type)
    return Queue(name, exchange, routing_key=conf.task_default_routing_key or name)
