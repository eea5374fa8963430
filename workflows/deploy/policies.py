"""The IAM policy of each process, least privilege: which actions on which tables, queues and objects.

The statements name CloudFormation resources (logical ids), so a policy covers exactly
the tables and queues of its stack. Every grant is data (tuples below), so adding an
action to a role is a one-line change; docs/aws.md explains what needs each one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
# IAM has no TransactWriteItems action: each item of a transaction is authorised by its own
# action (Put -> PutItem, Update -> UpdateItem, Delete -> DeleteItem, ConditionCheck -> ConditionCheckItem).
WRITE = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem")
DELETE = ("dynamodb:DeleteItem",)
#: A fork or rerun copies the source run's history items in batches (``Store.copy_history``).
COPY = ("dynamodb:BatchWriteItem",)
#: ``workflows runs reindex`` scans the runs and tags tables, once per upgrade.
SCAN = ("dynamodb:Scan",)
# kombu reads a queue's attributes (GetQueueAttributes) before it first sends to it.
SEND = ("sqs:SendMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes")
CONSUME = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility")
#: Workers put poison messages on the dead-letter queue themselves (workflows.celery.deadletter).
PUT_DEAD_LETTERS = ("sqs:SendMessage", "sqs:GetQueueUrl")
#: ``workflows dlq list`` and ``purge``.
READ_DEAD_LETTERS = ("sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:PurgeQueue")
#: Large payloads (docs/payloads.md): objects of the payload bucket, under its key prefix.
READ_PAYLOADS = ("s3:GetObject",)
WRITE_PAYLOADS = ("s3:PutObject",)
#: A copy of an object into another run's prefix (``Payloads.adopt``) and the retention sweep's
#: mark (a copy onto itself tagged ended) replace the object's tags.
TAG_PAYLOADS = ("s3:PutObjectTagging",)
#: The retention sweep lists an ended run's prefix; ``workflows payloads orphans`` lists the bucket.
LIST_PAYLOADS = ("s3:ListBucket",)
#: ``workflows payloads orphans --delete``.
DELETE_PAYLOADS = ("s3:DeleteObject",)
# kombu lists queues by name prefix to find them; ListQueues cannot be limited to some queues.
FIND_QUEUES = {"Sid": "FindQueues", "Effect": "Allow", "Action": "sqs:ListQueues", "Resource": "*"}

#: Every table (a grant's ``tables`` of ``None``).
ALL = None
#: The tables a client writes: not history (the engine's record) nor joins (branches' results).
CLIENT_WRITES = ("runs", "hooks", "timers", "schedules", "signals", "idempotency", "tags", "flow", "batches")


@dataclass(frozen=True)
class TableGrant:
    """DynamoDB actions on some tables (and their indexes, when the actions read them).

    Attributes:
        sid: the statement id.
        actions: the DynamoDB actions.
        tables: table short names; ``None`` means every table.
    """

    sid: str
    actions: tuple[str, ...]
    tables: tuple[str, ...] | None = ALL


@dataclass(frozen=True)
class Role:
    """One kind of process and what it may do.

    Attributes:
        key: the logical-id stem (``Worker`` -> ``WorkerPolicy``).
        description: what the process is.
        tables: its DynamoDB grants.
        queue_actions: SQS actions on the work queues.
        dead_letter_actions: SQS actions on the dead-letter queue.
        payload_actions: S3 actions on the objects of the payload bucket.
        bucket_actions: S3 actions on the payload bucket itself (listing).
        find_queues: whether it finds queues by listing them (every process that sends through kombu).
    """

    key: str
    description: str
    tables: tuple[TableGrant, ...]
    queue_actions: tuple[str, ...] = ()
    dead_letter_actions: tuple[str, ...] = ()
    payload_actions: tuple[str, ...] = READ_PAYLOADS + WRITE_PAYLOADS + TAG_PAYLOADS
    bucket_actions: tuple[str, ...] = ()
    find_queues: bool = True


ROLES = (
    Role("Worker", "workflows worker: runs steps and resumes runs",
         (TableGrant("Read", READ), TableGrant("Write", WRITE), TableGrant("DeleteItems", DELETE),
          # a continue-as-new deletes the signals its run took (``Store.delete_signals``)
          TableGrant("DeleteSignals", COPY, ("signals",))),
         SEND + CONSUME, PUT_DEAD_LETTERS),
    Role("Beat", "workflows beat: due timers, schedules, recovery of expired leases, retention, batches",
         (TableGrant("Read", READ), TableGrant("Write", WRITE), TableGrant("DeleteItems", DELETE),
          # a rerun batch copies each failed run's history (``Store.copy_history``)
          TableGrant("CopyHistory", COPY, ("history",))), SEND,
         bucket_actions=LIST_PAYLOADS),
    Role("Client", "code that starts, signals, cancels and lists runs, resumes hooks, manages schedules and batches",
         (TableGrant("Read", READ), TableGrant("Write", WRITE, CLIENT_WRITES),
          TableGrant("DeleteItems", DELETE, ("schedules", "batches"))), SEND),
    Role("HookEndpoint", "the HTTP hook endpoint (workflows.http:app): resumes hooks",
         (TableGrant("Read", ("dynamodb:GetItem", "dynamodb:Query"), ("hooks", "runs")),
          TableGrant("Write", WRITE, ("hooks", "runs"))), SEND, payload_actions=WRITE_PAYLOADS),
    Role("Operator", "attach with ClientPolicy: what the CLI and dashboard do beyond a client "
                     "(fork, rerun, runs reindex, dead letters)",
         (TableGrant("CopyHistory", COPY, ("history",)), TableGrant("Reindex", SCAN, ("runs", "tags")),
          TableGrant("MoveTags", DELETE, ("tags",))),
         dead_letter_actions=READ_DEAD_LETTERS, payload_actions=DELETE_PAYLOADS, bucket_actions=LIST_PAYLOADS,
         find_queues=False),
)


def _arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def _index_arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::Sub": "${" + logical_id + ".Arn}/index/*"}


def _reads_indexes(actions: tuple[str, ...]) -> bool:
    return bool({"dynamodb:Query", "dynamodb:Scan"} & set(actions))


def table_statement(grant: TableGrant, tables: dict[str, str], indexed: set[str]) -> dict[str, Any]:
    """The statement of ``grant``: its tables' ARNs, and their index ARNs when it queries or scans."""
    names = list(tables) if grant.tables is None else [n for n in tables if n in grant.tables]
    resources: list[Any] = []
    for name in names:
        resources.append(_arn(tables[name]))
        if name in indexed and _reads_indexes(grant.actions):
            resources.append(_index_arn(tables[name]))
    return {"Sid": grant.sid, "Effect": "Allow", "Action": list(grant.actions), "Resource": resources}


def policy_document(role: Role, tables: dict[str, str], indexed: set[str], queues: dict[str, str],
                    dead_letter: str, bucket: str | None = None) -> dict[str, Any]:
    """The policy document of ``role``.

    Args:
        role: the process.
        tables: table short name -> logical id.
        indexed: short names of the tables that have secondary indexes.
        queues: work queue short name -> logical id (the dead-letter queue excluded).
        dead_letter: logical id of the dead-letter queue.
        bucket: logical id of the payload bucket, if the stack has one.
    """
    statements = [table_statement(grant, tables, indexed) for grant in role.tables]
    if role.queue_actions:
        statements.append({"Sid": "Queues", "Effect": "Allow", "Action": list(role.queue_actions),
                           "Resource": [_arn(queues[n]) for n in queues]})
    if role.dead_letter_actions:
        statements.append({"Sid": "DeadLetters", "Effect": "Allow", "Action": list(role.dead_letter_actions),
                           "Resource": [_arn(dead_letter)]})
    if bucket is not None and role.payload_actions:
        statements.append({"Sid": "Payloads", "Effect": "Allow", "Action": list(role.payload_actions),
                           "Resource": [{"Fn::Sub": "${" + bucket + ".Arn}/payloads/*"}]})
    if bucket is not None and role.bucket_actions:
        statements.append({"Sid": "PayloadBucket", "Effect": "Allow", "Action": list(role.bucket_actions),
                           "Resource": [_arn(bucket)]})
    if role.find_queues:
        statements.append(dict(FIND_QUEUES))
    return {"Version": "2012-10-17", "Statement": statements}
