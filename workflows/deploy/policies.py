"""The IAM policy of each process, least privilege: which actions on which tables and queues.

The statements name CloudFormation resources (logical ids), so a policy covers exactly
the tables and queues of its stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
# A TransactWriteItems is authorised item by item: Put/Update/Delete/ConditionCheck each need their action.
WRITE = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem")
DELETE = ("dynamodb:DeleteItem",)
SEND = ("sqs:SendMessage", "sqs:GetQueueUrl")
CONSUME = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes")
#: Large payloads (docs/payloads.md): objects of the payload bucket, under its key prefix.
READ_PAYLOADS = ("s3:GetObject",)
WRITE_PAYLOADS = ("s3:PutObject",)
# kombu lists queues by name prefix to find them; ListQueues cannot be limited to some queues.
FIND_QUEUES = {"Sid": "FindQueues", "Effect": "Allow", "Action": "sqs:ListQueues", "Resource": "*"}


@dataclass(frozen=True)
class Role:
    """One kind of process and what it may do.

    Attributes:
        key: the logical-id stem (``Worker`` -> ``WorkerPolicy``).
        description: what the process is.
        tables: table short names it uses; ``None`` means every table.
        table_actions: DynamoDB actions on those tables and their indexes.
        delete_tables: table short names it may delete items from.
        queue_actions: SQS actions on the work queues.
        dead_letter_actions: SQS actions on the dead-letter queue.
        payload_actions: S3 actions on the objects of the payload bucket.
    """

    key: str
    description: str
    tables: tuple[str, ...] | None
    table_actions: tuple[str, ...]
    delete_tables: tuple[str, ...] | None
    queue_actions: tuple[str, ...]
    dead_letter_actions: tuple[str, ...] = ()
    payload_actions: tuple[str, ...] = READ_PAYLOADS + WRITE_PAYLOADS


ROLES = (
    Role("Worker", "workflows worker: runs steps and resumes runs", None, READ + WRITE, None,
         SEND + CONSUME, ("sqs:SendMessage", "sqs:GetQueueUrl")),
    Role("Beat", "workflows beat: due timers, schedules, recovery of expired leases", None, READ + WRITE, None,
         SEND),
    Role("Client", "code that starts, signals, cancels and lists runs, resumes hooks, manages schedules",
         None, READ + WRITE, ("schedules",), SEND),
    Role("HookEndpoint", "the HTTP hook endpoint (workflows.http:app): resumes hooks",
         ("hooks", "runs", "history"), READ + WRITE, (), SEND, payload_actions=WRITE_PAYLOADS),
)


def _arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def _index_arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::Sub": "${" + logical_id + ".Arn}/index/*"}


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
    names = list(tables) if role.tables is None else [n for n in tables if n in role.tables]
    resources: list[Any] = []
    for name in names:
        resources.append(_arn(tables[name]))
        if name in indexed:
            resources.append(_index_arn(tables[name]))
    statements: list[dict[str, Any]] = [
        {"Sid": "Tables", "Effect": "Allow", "Action": list(role.table_actions), "Resource": resources}]
    deletable = names if role.delete_tables is None else [n for n in names if n in role.delete_tables]
    if deletable:
        statements.append({"Sid": "DeleteItems", "Effect": "Allow", "Action": list(DELETE),
                           "Resource": [_arn(tables[n]) for n in deletable]})
    statements.append({"Sid": "Queues", "Effect": "Allow", "Action": list(role.queue_actions),
                       "Resource": [_arn(queues[n]) for n in queues]})
    if role.dead_letter_actions:
        statements.append({"Sid": "DeadLetters", "Effect": "Allow", "Action": list(role.dead_letter_actions),
                           "Resource": [_arn(dead_letter)]})
    if bucket is not None and role.payload_actions:
        statements.append({"Sid": "Payloads", "Effect": "Allow", "Action": list(role.payload_actions),
                           "Resource": [{"Fn::Sub": "${" + bucket + ".Arn}/payloads/*"}]})
    statements.append(dict(FIND_QUEUES))
    return {"Version": "2012-10-17", "Statement": statements}
