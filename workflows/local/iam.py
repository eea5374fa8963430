"""IAM enforcement for the local AWS emulator, to run processes under their own policies.

moto enforces IAM only when its server starts with the ``INITIAL_NO_AUTH_ACTION_COUNT``
environment variable, and that setting is global to the server's process, so an
enforcing emulator runs in a process of its own (``workflows local-aws --enforce-iam``).

Stock moto authorises every DynamoDB action against the resource ``*`` (a statement
naming table ARNs never matches), ``TransactWriteItems`` as an action of its own, and
``sqs:GetQueueUrl`` against ``*``, and SQS's batch operations as actions of their own.
:func:`authorise_like_aws` makes the emulator
authorise them as AWS documents: a DynamoDB action against its table's ARN (the index
ARN for a query of an index), each item of a transaction by its own action
(``PutItem``, ``UpdateItem``, ``DeleteItem``, ``ConditionCheckItem``, ``GetItem``), a
batch against each of its tables, and ``GetQueueUrl`` against the queue's ARN. It
also authorises S3 requests by their IAM actions rather than their operation names
(stock moto asks for ``s3:CopyObject`` and ``s3:ListObjectsV2``, which are not IAM
actions): a copy by ``GetObject`` on its source, ``PutObject`` on its target (and
``PutObjectTagging`` when it replaces the tags), a listing by ``ListBucket`` on the bucket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import IO, Any, Iterator, Mapping
from urllib.parse import unquote

from ..errors import ConfigurationError
from .server import START_DEADLINE, free_port

#: moto's switch: the number of requests served before IAM is enforced.
NO_AUTH_ENV = "INITIAL_NO_AUTH_ACTION_COUNT"
#: Statement of the emulator's administrator (provisioning and IAM set-up).
ADMIN_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
ADMIN_USER = "local-admin"
#: Transaction item kind -> the IAM action that authorises it.
ITEM_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
#: SQS batch operation -> the IAM action that authorises it (that of one message).
SQS_BATCH_ACTIONS = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage",
                     "ChangeMessageVisibilityBatch": "ChangeMessageVisibility"}


def dynamodb_checks(action: str, params: dict[str, Any], table_arn: str) -> Iterator[tuple[str, str]]:
    """The (action, resource) pairs AWS authorises for one DynamoDB request.

    Args:
        action: the API operation (``GetItem``, ``TransactWriteItems``...).
        params: the request's parameters.
        table_arn: the ARN prefix of a table, ``arn:aws:dynamodb:REGION:ACCOUNT:table/``.
    """
    if action in ("TransactWriteItems", "TransactGetItems"):
        for item in params.get("TransactItems", []):
            for kind, body in item.items():
                yield ITEM_ACTIONS[kind], table_arn + body["TableName"]
    elif action in ("BatchGetItem", "BatchWriteItem"):
        for table in params.get("RequestItems", {}):
            yield action, table_arn + table
    elif params.get("TableName"):
        index = params.get("IndexName")
        yield action, table_arn + params["TableName"] + (f"/index/{index}" if index else "")
    else:
        yield action, "*"


def authorise_like_aws() -> None:
    """Patch moto's DynamoDB, SQS and S3 handlers to authorise requests as AWS does."""
    from moto.dynamodb.responses import DynamoHandler
    from moto.iam.access_control import IAMRequest, S3IAMRequest
    from moto.s3.responses import S3Response
    from moto.sqs.exceptions import QueueDoesNotExist
    from moto.sqs.responses import SQSResponse

    def as_action(action: str) -> Any:
        def request(**kwargs: Any) -> IAMRequest:
            return IAMRequest(**{**kwargs, "action": action})
        return request

    def as_s3_action(action: str) -> Any:
        def request(**kwargs: Any) -> S3IAMRequest:
            return S3IAMRequest(**{**kwargs, "action": action})
        return request

    def authorise_s3(self: Any, bucket_name: str | None = None, key_name: str | None = None) -> None:
        for action, arn in s3_checks(self._get_action(), bucket_name, key_name, self.headers):
            self._authenticate_and_authorize_action(as_s3_action(action), arn)

    def authorise_dynamodb(self: Any, resource: str = "*") -> None:
        prefix = f"arn:aws:dynamodb:{self.region}:{self.current_account}:table/"
        params = self.body if isinstance(self.body, dict) else {}
        for action, arn in dynamodb_checks(self._get_action(), params, prefix):
            self._authenticate_and_authorize_action(as_action(action), arn)

    original = SQSResponse._determine_resource

    def sqs_resource(self: Any) -> str:
        if self._get_action() != "GetQueueUrl":
            return str(original(self))
        try:
            return str(self.sqs_backend.get_queue(self._get_param("QueueName")).queue_arn)
        except QueueDoesNotExist:
            return "*"

    def authorise_sqs(self: Any, resource: str = "*") -> None:
        action = self._get_action()
        self._authenticate_and_authorize_action(as_action(SQS_BATCH_ACTIONS.get(action, action)), resource)

    DynamoHandler._authenticate_and_authorize_normal_action = authorise_dynamodb  # type: ignore[method-assign]
    SQSResponse._authenticate_and_authorize_normal_action = authorise_sqs  # type: ignore[method-assign]
    SQSResponse._determine_resource = sqs_resource  # type: ignore[method-assign]
    S3Response._authenticate_and_authorize_s3_action = authorise_s3  # type: ignore[method-assign]


#: S3 operations authorised by another IAM action, on the bucket rather than an object.
S3_BUCKET_ACTIONS = {"ListObjectsV2": "ListBucket", "ListObjects": "ListBucket", "HeadBucket": "ListBucket"}


def s3_checks(operation: str, bucket: str | None, key: str | None,
              headers: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """The (action, resource) pairs AWS authorises for one S3 request.

    Args:
        operation: the API operation (``GetObject``, ``CopyObject``...).
        bucket: the request's bucket, if any.
        key: the request's object key, if any.
        headers: the request's headers (a copy names its source in ``x-amz-copy-source``).
    """
    target = f"arn:aws:s3:::{bucket or '*'}" + (f"/{key}" if key else "")
    if operation == "CopyObject":
        source = unquote(str(headers.get("x-amz-copy-source", ""))).split("?")[0].lstrip("/")
        yield "GetObject", f"arn:aws:s3:::{source}"
        yield "PutObject", target
        if str(headers.get("x-amz-tagging-directive", "")).upper() == "REPLACE":
            yield "PutObjectTagging", target
    elif operation in S3_BUCKET_ACTIONS:
        yield S3_BUCKET_ACTIONS[operation], f"arn:aws:s3:::{bucket or '*'}"
    else:
        yield operation, target


def enforce_in_this_process() -> None:
    """Enforce IAM from the first request on in this process's moto server (call before it starts)."""
    from moto import settings

    settings.INITIAL_NO_AUTH_ACTION_COUNT = float(os.environ.get(NO_AUTH_ENV, "0"))
    authorise_like_aws()


class EnforcedLocalAWS:
    """A local AWS that enforces IAM, in a child process (``workflows local-aws --enforce-iam``).

    Once started it holds an administrator's access keys (:meth:`environ`); create users
    and policies with them, then give each process its own keys.

    Args:
        log: where the server's output goes (``None``: discarded).
    """

    def __init__(self, log: IO[bytes] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = log
        self._proc: subprocess.Popen[bytes] | None = None
        self.admin: dict[str, str] = {}

    def start(self) -> EnforcedLocalAWS:
        """Start the server, wait until it answers, and create its administrator.

        Raises:
            ConfigurationError: the server did not answer in time.
        """
        env = {**os.environ, NO_AUTH_ENV: "0"}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "workflows", "local-aws", "--enforce-iam", "--port", str(self.port)],
            env=env, stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_DEADLINE
        while not self._answers():
            if time.monotonic() > deadline or self._proc.poll() is not None:
                self.stop()
                raise ConfigurationError(f"the IAM-enforcing local AWS at {self.url} did not answer in time")
            time.sleep(0.1)
        self.admin = self._create_admin()
        return self

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1).close()
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def _set_unauthenticated(self, count: str) -> None:
        request = urllib.request.Request(f"{self.url}/moto-api/reset-auth", data=count.encode(), method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=10).close()

    def _create_admin(self) -> dict[str, str]:
        import boto3

        self._set_unauthenticated("inf")  # the administrator is made before anyone can sign
        try:
            iam = boto3.client("iam", endpoint_url=self.url, region_name="us-east-1",
                               aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
            iam.create_user(UserName=ADMIN_USER)
            iam.put_user_policy(UserName=ADMIN_USER, PolicyName="admin", PolicyDocument=json.dumps(ADMIN_POLICY))
            key = iam.create_access_key(UserName=ADMIN_USER)["AccessKey"]
        finally:
            self._set_unauthenticated("0")
        return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}

    def environ(self, region: str = "us-east-1") -> dict[str, str]:
        """Environment variables pointing the AWS SDK at this server, with the administrator's keys."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ENDPOINT_URL_DYNAMODB": self.url, "AWS_ENDPOINT_URL_SQS": self.url,
                "AWS_DEFAULT_REGION": region, **self.admin}

    def stop(self) -> None:
        """Stop the server; does nothing if it is not running."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> EnforcedLocalAWS:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
