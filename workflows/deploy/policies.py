"""The IAM policy of each process, least privilege: which actions on which tables, queues and objects.

The statements name CloudFormation resources (logical ids), so a policy covers exactly the tables,
queues and objects of its stack. The grants are data: for each role, every DynamoDB action with the
tables it acts on, then the SQS and S3 actions; docs/aws.md says what needs each one.

They are what the code of each process can ask for, no more: every AWS request is declared where it
is made (``workflows.core.storage.aws_actions``), each role names its entry points (below), and
tests/deploy/test_policy_coverage.py follows the calls from those entry points to the declarations and
fails on a grant that is missing or unused. A change that makes a new request fails that test until
the grant is added here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# IAM has no TransactWriteItems action: each item of a transaction is authorised by its own
# action (Put -> PutItem, Update -> UpdateItem, Delete -> DeleteItem, ConditionCheck -> ConditionCheckItem).
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


@dataclass(frozen=True)
class TableGrant:
    """DynamoDB actions on some tables and on the indexes of some.

    Attributes:
        sid: the statement id.
        actions: the DynamoDB actions.
        tables: short names of the tables (their ARNs).
        indexes: short names of the tables whose indexes (``table/NAME/index/*``) it queries or scans.
    """

    sid: str
    actions: tuple[str, ...]
    tables: tuple[str, ...]
    indexes: tuple[str, ...] = ()


def table_grants(**tables_of: str) -> tuple[TableGrant, ...]:
    """One statement per DynamoDB action, named after it: ``Query="history runs/index"`` grants
    ``dynamodb:Query`` on the history table and on the indexes of the runs table."""
    grants = []
    for action, names in tables_of.items():
        words = names.split()
        grants.append(TableGrant(action, (f"dynamodb:{action}",), tuple(w for w in words if "/" not in w),
                                 tuple(w.removesuffix("/index") for w in words if w.endswith("/index"))))
    return tuple(grants)


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
        entry_points: the code the process runs: ``module:function``, ``module:Class`` (every method:
            what a library calls), ``module:Class.method``, ``module:*`` (every public function and class).
            The Operator's are checked against the Client's and the Operator's grants together.
        not_run: functions its entry points reach in the source that the process never runs (each
            with its reason where it is listed); the calls are not followed into them.
    """

    key: str
    description: str
    tables: tuple[TableGrant, ...]
    queue_actions: tuple[str, ...] = ()
    dead_letter_actions: tuple[str, ...] = ()
    payload_actions: tuple[str, ...] = ()
    bucket_actions: tuple[str, ...] = ()
    find_queues: bool = True
    entry_points: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()


#: What a workflow's or step's code calls, in a worker: the durable calls, the deterministic
#: helpers, steps and child workflows, the handles these return.
WORKFLOW_CODE = ("workflows.core.ops.calls:*", "workflows.core.ops.first:*", "workflows.core.replay.deterministic:*",
                 "workflows.core.ops.patching:*", "workflows.core.ops.replay_log:*",
                 "workflows.core.replay.updates:on_update", "workflows.core.ops.waits:HookHandle",
                 "workflows.core.ops.waits:ChildHandle", "workflows.core.ops.async_workflow:*",
                 "workflows.decorators:Step", "workflows.decorators:Workflow")
#: A Celery worker: the app and its tasks (``workflows worker``, or a user's app with ``workflows.install``),
#: the consumer that sets poison messages aside, the visibility keeper, and the SQS channel kombu drives.
WORKER = ("workflows.celery.app:create_app", "workflows.celery.install:install", "workflows.celery.tasks:install",
          "workflows.celery.deadletter:DeadLetterConsumer", "workflows.celery.visibility:install",
          "workflows.celery.sqs:Channel")
#: Celery beat with the workflows scheduler, and the CLI commands that do beat's work by hand.
BEAT = ("beat.scheduler:WorkflowScheduler", "beat.scheduler:tick_once", "workflows.cli.commands:cmd_reconcile",
        "workflows.cli.retention:cmd_retention_keep_alive", "workflows.cli.retention:cmd_retention_sweep")
#: The client API: starting, signalling, cancelling, reading and listing runs, hooks, schedules, batches.
CLIENT = ("workflows.client:*", "workflows.schedules:*", "workflows.batches.api:*", "workflows.events:get_event",
          "workflows.events:read_stream", "workflows.decorators:BoundStart",
          *(f"workflows.decorators:Workflow.{m}" for m in ("start", "options", "apply_async", "start_with")))
CLIENT_NOT_RUN = (
    "workflows.core.ops.waits:start_child",  # a child starts only inside a workflow (a worker's); outside, a start
    "workflows.forking:fork_run", "workflows.forking:rerun",  # copy history: the Operator's (RunHandle.fork, .rerun)
)
#: The hook endpoint (``workflows.http:app``).
HOOK_ENDPOINT = ("workflows.web.hooks:HooksApp", "workflows.web.hooks:create_app")
HOOK_ENDPOINT_NOT_RUN = (
    "workflows.core.background.firing:on_run_end",  # the run-end listener: resuming a hook ends no run
)
#: The CLI's commands but those that provision, serve or run another role, and the dashboard.
OPERATOR = (*(f"workflows.cli.commands:cmd_{c}" for c in (
    "runs_list", "runs_count", "runs_reindex", "runs_show", "runs_events", "runs_start", "runs_export", "replay",
    "runs_cancel", "runs_signal", "hooks_complete", "hooks_list", "dlq_list", "dlq_purge")),
    *(f"workflows.cli.{m}:*" for m in ("batches", "deferred", "events", "flow", "forks", "payloads", "schedules",
                                        "updates")),
    "workflows.web.app:*", "workflows.web.batches:*", "workflows.web.views:*", "workflows.web.timeline:*",
    "workflows.web.updates:*")

ROLES = (
    Role("Worker", "workflows worker: runs steps and resumes runs",
         table_grants(
             GetItem="batches flow history hooks idempotency joins runs schedules",
             BatchGetItem="batches flow history hooks runs schedules",
             Query="batches flow history joins signals tags hooks/index runs/index schedules/index",
             PutItem="batches flow history hooks idempotency joins runs schedules signals tags timers",
             UpdateItem="flow hooks joins runs schedules",
             ConditionCheckItem="runs",
             DeleteItem="batches flow schedules signals tags timers",
             # a continue-as-new deletes the signals its run took (``Store.delete_signals``)
             BatchWriteItem="signals"),
         SEND + CONSUME, PUT_DEAD_LETTERS, READ_PAYLOADS + WRITE_PAYLOADS + TAG_PAYLOADS,
         # a step's (or a task's) code may use the client API: examples/celery_app starts a run from a task
         entry_points=WORKER + WORKFLOW_CODE + CLIENT, not_run=CLIENT_NOT_RUN[1:]),
    Role("Beat", "workflows beat: due timers, schedules, recovery of expired leases, retention, batches",
         table_grants(
             GetItem="batches history hooks idempotency runs schedules timers",
             BatchGetItem="history hooks runs schedules",
             Query="batches flow history joins signals tags hooks/index runs/index schedules/index timers/index",
             PutItem="batches flow history idempotency joins runs schedules signals tags timers",
             UpdateItem="batches history hooks idempotency joins runs schedules signals tags timers",
             ConditionCheckItem="runs",
             DeleteItem="batches flow schedules tags timers",
             # a rerun batch copies each failed run's history (``Store.copy_history``)
             BatchWriteItem="history"),
         SEND, payload_actions=READ_PAYLOADS + WRITE_PAYLOADS + TAG_PAYLOADS, bucket_actions=LIST_PAYLOADS,
         entry_points=BEAT),
    Role("Client", "code that starts, signals, cancels and lists runs, resumes hooks, manages schedules and batches",
         table_grants(
             GetItem="batches flow history hooks idempotency runs schedules",
             BatchGetItem="batches history hooks runs schedules",
             Query="batches flow history signals tags hooks/index runs/index schedules/index",
             PutItem="batches flow idempotency runs schedules signals tags timers",
             UpdateItem="flow hooks runs schedules",
             DeleteItem="batches schedules"),
         SEND, payload_actions=READ_PAYLOADS + WRITE_PAYLOADS, entry_points=CLIENT, not_run=CLIENT_NOT_RUN),
    Role("HookEndpoint", "the HTTP hook endpoint (workflows.http:app): resumes hooks",
         table_grants(
             GetItem="hooks runs",
             # the hooks and result of a run that ended: a late resume closes the run's hooks
             BatchGetItem="history hooks",
             Query="hooks/index",
             UpdateItem="hooks runs"),
         SEND, payload_actions=WRITE_PAYLOADS, entry_points=HOOK_ENDPOINT, not_run=HOOK_ENDPOINT_NOT_RUN),
    Role("Operator", "attach with ClientPolicy: what the CLI and dashboard do beyond a client "
                     "(fork, rerun, runs reindex, batches driven here, dead letters, orphan payloads)",
         table_grants(
             Query="joins",
             Scan="runs tags",
             UpdateItem="batches",
             DeleteItem="tags",
             BatchWriteItem="history"),
         dead_letter_actions=READ_DEAD_LETTERS, payload_actions=TAG_PAYLOADS + DELETE_PAYLOADS,
         bucket_actions=LIST_PAYLOADS, find_queues=False, entry_points=OPERATOR),
)


def _arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def _index_arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::Sub": "${" + logical_id + ".Arn}/index/*"}


def table_statement(grant: TableGrant, tables: dict[str, str], indexed: set[str]) -> dict[str, Any]:
    """The statement of ``grant``: its tables' ARNs, then its indexes' ARNs.

    Raises:
        ValueError: a grant names a table the stack does not have, or indexes of a table without any.
    """
    unknown = sorted(set(grant.tables + grant.indexes) - set(tables)) + sorted(set(grant.indexes) - indexed)
    if unknown:
        raise ValueError(f"grant {grant.sid}: no table, or no index of table, {', '.join(unknown)}")
    resources: list[Any] = [_arn(tables[n]) for n in tables if n in grant.tables]
    resources += [_index_arn(tables[n]) for n in tables if n in grant.indexes]
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
