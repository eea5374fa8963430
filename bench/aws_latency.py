"""Per-operation latency as AWS publishes it, for the counting front's second column.

On moto every request costs the emulator's CPU, and one process serves them all:
a ratio measured there is a ratio of emulator costs. With ``--aws-latency`` the
counting front also sleeps, before each request takes its turn, for the time the
operation takes on AWS (figures below, milliseconds, in-region; sources in
docs/performance.md), so requests overlap as they do on AWS and the ratio is
decided by how many requests a run waits for, one after another.

Keys are ``service.Operation`` as the front classifies them. Override one with
``--set aws.dynamodb.GetItem=8`` (repeatable); an operation not listed adds nothing.
"""

from __future__ import annotations

from typing import Iterable, Mapping

#: Milliseconds per request. DynamoDB: AWS states single-digit-millisecond latency for its item
#: operations (GetItem, PutItem, UpdateItem, DeleteItem), a Query's depends on what it reads;
#: a transaction does two underlying writes per item (prepare and commit). SQS: 16 ms to send a
#: 1 KB message, as AWS measured it. S3: a small object's median latency is tens of milliseconds.
AWS_MS: dict[str, float] = {
    "dynamodb.GetItem": 4.0,
    "dynamodb.PutItem": 6.0,
    "dynamodb.UpdateItem": 6.0,
    "dynamodb.DeleteItem": 6.0,
    "dynamodb.Query": 6.0,
    "dynamodb.Scan": 10.0,
    "dynamodb.BatchGetItem": 8.0,
    "dynamodb.BatchWriteItem": 10.0,
    "dynamodb.TransactGetItems": 8.0,
    "dynamodb.TransactWriteItems": 12.0,
    "sqs.SendMessage": 16.0,
    "sqs.SendMessageBatch": 20.0,
    "sqs.ReceiveMessage": 16.0,
    "sqs.DeleteMessage": 16.0,
    "sqs.DeleteMessageBatch": 20.0,
    "sqs.ChangeMessageVisibility": 16.0,
    "sqs.GetQueueAttributes": 16.0,
    "s3.PutObject": 30.0,
    "s3.GetObject": 30.0,
}
PREFIX = "aws."  # ``--set aws.<service>.<Operation>=MS``
COLUMNS = ("moto", "aws")  # moto as it is; moto plus AWS's latency


def overrides(items: Iterable[str]) -> tuple[dict[str, float], list[str]]:
    """Split ``--set`` items into latency overrides (``aws.sqs.SendMessage=20``) and the others."""
    table: dict[str, float] = {}
    rest = []
    for item in items:
        name, _, value = item.partition("=")
        if not name.startswith(PREFIX):
            rest.append(item)
            continue
        key = name[len(PREFIX):]
        if "." not in key:
            raise SystemExit(f"--set {item}: expected aws.<service>.<Operation>=<milliseconds>")
        try:
            table[key] = float(value)
        except ValueError:
            raise SystemExit(f"--set {item}: {value!r} is not a number of milliseconds") from None
    return table, rest


def table(changes: Mapping[str, float] | None = None) -> dict[str, float]:
    """The latency table in milliseconds: the published figures with ``changes`` applied."""
    return {**AWS_MS, **(changes or {})}


def seconds(table_ms: Mapping[str, float], service: str, operation: str) -> float:
    """Seconds the front adds to one request of ``service.operation`` (0 when not listed)."""
    return max(0.0, float(table_ms.get(f"{service}.{operation}", 0.0))) / 1000.0


__all__ = ["AWS_MS", "COLUMNS", "overrides", "seconds", "table"]
