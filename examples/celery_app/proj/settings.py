"""The project's settings, read by Celery with the ``CELERY_`` namespace (as in a Django project)."""

import os

from kombu import Exchange, Queue

#: SQS: ``sqs://`` on AWS, or ``sqs://KEY:SECRET@host:port`` for a local stack.
CELERY_BROKER_URL = os.environ.get("PROJ_BROKER_URL", "sqs://")
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "region": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    # The same prefix as WORKFLOWS_QUEUE_PREFIX: workflows.install(app) checks it.
    "queue_name_prefix": os.environ.get("PROJ_QUEUE_PREFIX", "proj-"),
    "wait_time_seconds": 1,
    "visibility_timeout": 60,
}
#: This project's own task messages are not JSON (YAML here; pickle is handled the same
#: way); workflow messages stay JSON, so the app must also accept JSON.
CELERY_TASK_SERIALIZER = "yaml"
CELERY_ACCEPT_CONTENT = ["yaml", "json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES = [Queue(name, Exchange(name, type="direct"), routing_key=name)
                      for name in ("default", "payments", "emails")]
CELERY_TASK_ROUTES = {
    "proj.tasks.charge_card": {"queue": "payments"},
    "proj.tasks.send_receipt": {"queue": "emails"},
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
