"""pyworkflow-engine 0.4.0 on the same SQS broker and DynamoDB server (runs in the peer's own virtualenv).

Its Celery worker is ``celery -A bench.peer_app worker``; :mod:`bench.peer_driver`
starts and waits for runs. Settings come from the environment the bench sets:
``AWS_ENDPOINT_URL``, ``PEER_PREFIX`` (queue and table prefix), ``PEER_POLL_WAIT_SECONDS``.
"""

from __future__ import annotations

import asyncio
import os
from urllib.parse import urlparse

ENDPOINT = os.environ["AWS_ENDPOINT_URL"]
PREFIX = os.environ.get("PEER_PREFIX", "pwb-")
_url = urlparse(ENDPOINT)
os.environ.setdefault(
    "PYWORKFLOW_CELERY_BROKER",
    f"sqs://{os.environ['AWS_ACCESS_KEY_ID']}:{os.environ['AWS_SECRET_ACCESS_KEY']}@{_url.hostname}:{_url.port}",
)
os.environ.setdefault("PYWORKFLOW_LOG_LEVEL", "WARNING")

import pyworkflow  # noqa: E402 - the broker URL must be in the environment before its Celery app is built
from pyworkflow import step, workflow  # noqa: E402
from pyworkflow.celery.app import celery_app  # noqa: E402
from pyworkflow.storage.dynamodb import DynamoDBStorageBackend  # noqa: E402

celery_app.conf.broker_transport_options.update({
    "region": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    "queue_name_prefix": PREFIX,
    "wait_time_seconds": int(os.environ.get("PEER_POLL_WAIT_SECONDS", "1")),
    "polling_interval": 0.05,
    "is_secure": False,
})
storage = DynamoDBStorageBackend(table_name=f"{PREFIX}pyworkflow", region="us-east-1", endpoint_url=ENDPOINT)
pyworkflow.configure(default_runtime="celery", default_durable=True, storage=storage)
app = celery_app
QUEUES = "pyworkflow.default,pyworkflow.steps,pyworkflow.workflows,pyworkflow.schedules"


@step()
async def add(a: int, b: int) -> int:
    """A dispatched step."""
    return a + b


@step(force_local=True)
async def add_local(a: int, b: int) -> int:
    """A step run in the workflow's own task (the peer's equivalent of ``inline=True``)."""
    return a + b


@workflow(name="peer_sequence")
async def sequence(n: int) -> int:
    """``n`` dispatched steps, one after another."""
    total = 0
    for i in range(n):
        total = await add(total, i)
    return total


@workflow(name="peer_inline_sequence")
async def inline_sequence(n: int) -> int:
    """``n`` local steps, one after another."""
    total = 0
    for i in range(n):
        total = await add_local(total, i)
    return total


@workflow(name="peer_fan_out")
async def fan_out(n: int) -> list[int]:
    """``n`` dispatched steps gathered at once."""
    return list(await asyncio.gather(*(add(i, i) for i in range(n))))


WORKFLOWS = {"sequence": sequence, "inline_sequence": inline_sequence, "fan_out": fan_out}
