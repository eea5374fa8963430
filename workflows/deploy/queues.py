"""``workflows init-aws``'s queues: create what is missing, add the redrive policy to old queues."""

from __future__ import annotations

import json
from typing import Any, Iterable

from persistence.provision import sqs_client
from workflows.core.storage.aws_actions import aws_actions
from workflows.settings import Settings

from .resources import DLQ_RETENTION_SECONDS, MAX_MESSAGE_BYTES, MAX_RECEIVE_COUNT, QueueSpec

#: The attributes init-aws keeps equal to the spec on queues that already exist.
MANAGED = ("RedrivePolicy", "MessageRetentionPeriod", "MaximumMessageSize")


def redrive_policy(dead_letter_arn: str, max_receive_count: int = MAX_RECEIVE_COUNT) -> str:
    """The ``RedrivePolicy`` attribute that sends a message to ``dead_letter_arn`` after too many receives."""
    return json.dumps({"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": max_receive_count})


def queue_attributes(spec: QueueSpec, settings: Settings, dead_letter_arn: str | None) -> dict[str, str]:
    """The attributes of a queue as init-aws creates it."""
    attributes = {"VisibilityTimeout": str(settings.visibility_timeout), "MaximumMessageSize": str(MAX_MESSAGE_BYTES)}
    if spec.dead_letter:
        attributes["MessageRetentionPeriod"] = str(DLQ_RETENTION_SECONDS)
    elif dead_letter_arn:
        attributes["RedrivePolicy"] = redrive_policy(dead_letter_arn)
    return attributes


def _same(attribute: str, current: str | None, wanted: str) -> bool:
    if current is None or attribute != "RedrivePolicy":
        return current == wanted
    have, want = json.loads(current), json.loads(wanted)
    return bool(have.get("deadLetterTargetArn") == want["deadLetterTargetArn"]
                and int(have.get("maxReceiveCount", 0)) == want["maxReceiveCount"])


@aws_actions("sqs:GetQueueUrl@queues", "sqs:CreateQueue@queues", "sqs:GetQueueAttributes@queues",
             "sqs:SetQueueAttributes@queues", "sqs:GetQueueUrl@dlq", "sqs:CreateQueue@dlq",
             "sqs:GetQueueAttributes@dlq", "sqs:SetQueueAttributes@dlq")
def ensure_queues(settings: Settings, specs: Iterable[QueueSpec]) -> list[tuple[str, str]]:
    """Create the missing queues and fix the redrive of existing ones; return (name, action) pairs.

    The action is ``created``, ``updated`` (a managed attribute differed) or ``exists``.
    The dead-letter queue comes first, since the others name its ARN.
    """
    client: Any = sqs_client(settings)
    report: list[tuple[str, str]] = []
    dead_letter_arn: str | None = None
    for spec in sorted(specs, key=lambda s: not s.dead_letter):
        full = settings.queue_prefix + spec.name
        wanted = queue_attributes(spec, settings, dead_letter_arn)
        try:
            url = client.get_queue_url(QueueName=full)["QueueUrl"]
        except client.exceptions.QueueDoesNotExist:
            url = client.create_queue(QueueName=full, Attributes=wanted)["QueueUrl"]
            action = "created"
        else:
            current = client.get_queue_attributes(QueueUrl=url, AttributeNames=list(MANAGED))["Attributes"]
            changes = {k: v for k, v in wanted.items() if k in MANAGED and not _same(k, current.get(k), v)}
            if changes:
                client.set_queue_attributes(QueueUrl=url, Attributes=changes)
            action = "updated" if changes else "exists"
        if spec.dead_letter:
            dead_letter_arn = client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
                "Attributes"]["QueueArn"]
        report.append((full, action))
    return report
