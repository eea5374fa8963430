"""Create the tables and queues a deployment needs, with TTL enabled on every table; idempotent."""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

import boto3
from botocore.config import Config

from workflows.core.storage.aws_actions import aws_actions
from workflows.settings import SQS_MAX_MESSAGE_BYTES, SQS_RETRIES, Settings

from .models import build_models

BASE_QUEUES = ("workflows", "steps")
DLQ = "dlq"


@lru_cache(maxsize=8)
def sqs_client(settings: Settings):  # type: ignore[no-untyped-def]
    """Return a (shared, thread-safe) boto3 SQS client for ``settings``."""
    return boto3.client("sqs", region_name=settings.region, endpoint_url=settings.sqs_endpoint,
                        config=Config(retries=dict(SQS_RETRIES)))


@aws_actions("dynamodb:DescribeTable@tables", "dynamodb:CreateTable@tables")
def create_tables(settings: Settings) -> list[tuple[str, bool]]:
    """Create every missing table (on-demand billing); return (name, created) pairs."""
    report = []
    for model in build_models(settings).all():
        exists = model.exists()
        if not exists:
            model.create_table(wait=True, billing_mode="PAY_PER_REQUEST")
        report.append((model.Meta.table_name, not exists))
    return report


@lru_cache(maxsize=8)
def dynamodb_client(settings: Settings):  # type: ignore[no-untyped-def]
    """Return a (shared, thread-safe) boto3 DynamoDB client for ``settings`` (table administration)."""
    return boto3.client("dynamodb", region_name=settings.region, endpoint_url=settings.dynamodb_endpoint)


@aws_actions("dynamodb:DescribeTimeToLive@tables", "dynamodb:UpdateTimeToLive@tables")
def ensure_ttl(settings: Settings) -> list[tuple[str, bool]]:
    """Enable TTL on the TTL attribute of every table where it is off; return (name, enabled now).

    Idempotent: a table whose TTL is enabled (or being enabled) is left alone, since
    UpdateTimeToLive refuses to enable it twice.
    """
    client = dynamodb_client(settings)
    report = []
    for model in build_models(settings).all():
        attribute = model._ttl_attribute()
        if attribute is None:
            continue
        name = model.Meta.table_name
        described = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        on = described.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
        if not on:
            client.update_time_to_live(TableName=name, TimeToLiveSpecification={
                "Enabled": True, "AttributeName": attribute.attr_name})
        report.append((name, not on))
    return report


@aws_actions("sqs:ListQueues@*", "sqs:CreateQueue@queues", "sqs:CreateQueue@dlq")
def create_queues(settings: Settings, extra: Iterable[str] = ()) -> list[tuple[str, bool]]:
    """Create the resume, step, custom step and dead-letter queues; return (name, created)."""
    client = sqs_client(settings)
    existing: set[str] = set()
    for page in client.get_paginator("list_queues").paginate(QueueNamePrefix=settings.queue_prefix):
        existing.update(url.rsplit("/", 1)[-1] for url in page.get("QueueUrls", []))
    report = []
    for name in dict.fromkeys([*BASE_QUEUES, *extra, DLQ]):
        full = settings.queue_prefix + name
        if full not in existing:
            client.create_queue(QueueName=full, Attributes={"VisibilityTimeout": str(settings.visibility_timeout),
                                                            "MaximumMessageSize": str(SQS_MAX_MESSAGE_BYTES)})
        report.append((full, full not in existing))
    return report
