"""Poison messages go aside, never retried forever: to the dead-letter queue ``PREFIX + dlq``.

A message that cannot be decoded, names an unknown task, or names an unknown run
is copied there (with the reason) and acknowledged. SQS also moves a message there
itself, unchanged, once it was received more times than its queue's redrive policy
allows (a worker died holding it, again and again). ``workflows dlq list`` shows
both; ``workflows dlq purge`` empties the queue.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from typing import Any

from celery.worker.consumer import Consumer

from persistence.provision import DLQ, sqs_client

from ..core.storage.aws_actions import aws_actions
from ..settings import get_settings

log = logging.getLogger("workflows.deadletter")

MAX_BODY = 200_000


@aws_actions("sqs:GetQueueUrl@dlq")
def _queue_url(client: Any) -> str:
    return str(client.get_queue_url(QueueName=get_settings().queue_prefix + DLQ)["QueueUrl"])


@aws_actions("sqs:SendMessage@dlq")
def dead_letter(reason: str, body: Any, **detail: Any) -> None:
    """Put a poison message on the dead-letter queue (best effort: a failure is logged)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    envelope = {"reason": reason, "at": time.time(), "body": str(body)[:MAX_BODY], **detail}
    _count(reason)
    try:
        client = sqs_client(get_settings())
        client.send_message(QueueUrl=_queue_url(client), MessageBody=json.dumps(envelope, default=str))
        log.error("dead-lettered a message: %s", reason)
    except Exception:
        log.exception("could not dead-letter a message (%s)", reason)


def _count(reason: str) -> None:
    try:
        from ..runtime import observer

        observer().dead_lettered(reason)
    except Exception:  # noqa: BLE001 - counting must not stop a dead letter
        log.warning("could not count a dead letter", exc_info=True)


REDRIVEN = "moved by SQS: received more times than the queue's redrive policy allows"


def describe_letter(body: str) -> dict[str, Any]:
    """A dead letter as a dict: our own envelope, or a Celery message SQS redrove (base64 JSON)."""
    try:
        envelope = json.loads(body)
    except ValueError:
        envelope = None
    if isinstance(envelope, dict) and "reason" in envelope:
        return envelope
    try:
        message = json.loads(base64.b64decode(body, validate=True))
    except (binascii.Error, ValueError):
        message = envelope
    headers = message.get("headers", {}) if isinstance(message, dict) else {}
    return {"reason": REDRIVEN, "task": headers.get("task"), "task_id": headers.get("id"),
            "body": body[:MAX_BODY]}


@aws_actions("sqs:ReceiveMessage@dlq")
def list_dead_letters(limit: int = 10) -> list[dict[str, Any]]:
    """Read up to ``limit`` dead letters; they stay queued (visible again a second later)."""
    client = sqs_client(get_settings())
    url = _queue_url(client)
    found: dict[str, dict[str, Any]] = {}
    while len(found) < limit:
        batch = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1,
                                       WaitTimeSeconds=0).get("Messages", [])
        fresh = [m for m in batch if m["MessageId"] not in found]
        if not fresh:
            break
        for message in fresh:
            found[message["MessageId"]] = describe_letter(message["Body"])
    return list(found.values())[:limit]


@aws_actions("sqs:PurgeQueue@dlq")
def purge_dead_letters() -> None:
    """Delete every dead letter."""
    client = sqs_client(get_settings())
    client.purge_queue(QueueUrl=_queue_url(client))


def _describe(message: Any) -> dict[str, Any]:
    info = getattr(message, "delivery_info", {}) or {}
    headers = getattr(message, "headers", {}) or {}
    return {"task": headers.get("task"), "task_id": headers.get("id"), "queue": info.get("routing_key"),
            "content_type": getattr(message, "content_type", None)}


class DeadLetterConsumer(Consumer):
    """Celery's consumer, but poison messages are dead-lettered before they are acked."""

    def on_decode_error(self, message: Any, exc: Exception) -> None:
        dead_letter(f"undecodable message: {exc}", message.body, **_describe(message))
        super().on_decode_error(message, exc)

    def on_unknown_message(self, body: Any, message: Any) -> None:
        dead_letter("not a task message", message.body, **_describe(message))
        super().on_unknown_message(body, message)

    def on_unknown_task(self, body: Any, message: Any, exc: Exception) -> None:
        dead_letter(f"unknown task: {exc}", message.body, **_describe(message))
        super().on_unknown_task(body, message, exc)

    def on_invalid_task(self, body: Any, message: Any, exc: Exception) -> None:
        dead_letter(f"invalid task message: {exc}", message.body, **_describe(message))
        super().on_invalid_task(body, message, exc)
