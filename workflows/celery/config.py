"""The Celery configuration, built from the typed settings: the one place it is written.

``workflows.app`` reads it lazily (when the app is first used), ``workflows.install(app)``
checks a user's app against the same settings, the send-only producer reuses it, and the
repository's top-level ``celeryconfig.py`` exposes it as module globals for Celery's own
``--config`` option. The worker-only parts (the dead-letter consumer) are set by the app
that runs a worker, so a process that only sends loads none of a worker's machinery.
"""

from __future__ import annotations

from typing import Any

from ..settings import SQS_RETRIES, Settings
from .sqs import Transport

RESUME_QUEUE = "workflows"
STEP_QUEUE = "steps"


def celery_config(settings: Settings) -> dict[str, Any]:
    """Return Celery settings: SQS broker, JSON only, late acks, prefetch 1, prefixed queues."""
    return {
        "broker_url": settings.broker_url(),
        "broker_transport": Transport,
        "broker_transport_options": {
            "region": settings.region,
            "queue_name_prefix": settings.queue_prefix,
            "visibility_timeout": settings.visibility_timeout,
            "wait_time_seconds": settings.poll_wait_seconds,
            "priority_share": settings.priority_share,  # read by workflows.celery.sqs.Channel
            "polling_interval": 0.05,
            "is_secure": settings.sqs_is_secure,
            "client-config": {"retries": dict(SQS_RETRIES)},
        },
        "broker_connection_retry_on_startup": True,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "event_serializer": "json",
        "task_ignore_result": True,
        "result_backend": None,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "worker_pool": "threads",
        "worker_concurrency": 8,
        "worker_hijack_root_logger": False,
        "worker_send_task_events": False,
        "task_default_queue": RESUME_QUEUE,
        "task_routes": {"workflows.resume": {"queue": RESUME_QUEUE}, "workflows.step.*": {"queue": STEP_QUEUE}},
        "imports": list(settings.imports),
        "beat_max_loop_interval": settings.sweep_interval,
        "enable_utc": True,
    }
