"""The plain-Celery baseline: its own app on the same SQS endpoint (another queue prefix),
with Celery's DynamoDB result backend on the same DynamoDB server.

Worker: ``celery -A bench.baseline worker --pool threads -c 4 -Q <prefix-less queue>``.
Settings come from the environment the bench sets: ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``BASELINE_PREFIX``,
``WORKFLOWS_POLL_WAIT_SECONDS`` (the same long-poll wait as the workflows workers).
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from celery import Celery, chain, chord

PREFIX = os.environ.get("BASELINE_PREFIX", "celb-")
QUEUE = "tasks"


def build_app() -> Celery:
    """A Celery app on SQS with the DynamoDB result backend, JSON only, late acks."""
    endpoint = urlparse(os.environ["AWS_ENDPOINT_URL"])
    key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    # An IP host makes Celery's backend use http://host:port as its endpoint (see celery.backends.dynamodb).
    backend = f"dynamodb://{key}:{secret}@{endpoint.hostname}:{endpoint.port}/{PREFIX}results?read=5&write=5"
    celery = Celery("baseline", broker=f"sqs://{key}:{secret}@{endpoint.hostname}:{endpoint.port}", backend=backend)
    celery.conf.update(
        broker_transport_options={
            "region": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            "queue_name_prefix": PREFIX,
            "wait_time_seconds": int(os.environ.get("WORKFLOWS_POLL_WAIT_SECONDS", "1")),
            "polling_interval": 0.05,
            "visibility_timeout": 1800,
            "is_secure": False,
        },
        broker_connection_retry_on_startup=True,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        worker_send_task_events=False,
        task_default_queue=QUEUE,
        result_extended=False,
    )
    return celery


app = build_app()


@app.task(name="baseline.add")
def add(a: int, b: int) -> int:
    """The step equivalent: add two numbers."""
    return a + b


@app.task(name="baseline.collect")
def collect(results: list[int]) -> list[int]:
    """The chord callback: receives every header result."""
    return results


def sequence(n: int) -> chain:
    """A chain of ``n`` tasks, each adding its index to the previous result."""
    return chain(add.s(0, 0), *(add.s(i) for i in range(1, n)))


def fan_out(n: int) -> chord:
    """A chord of ``n`` tasks and a callback."""
    return chord((add.s(i, i) for i in range(n)), collect.s())
