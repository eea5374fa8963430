"""The IAM-enforcing emulator keeps what it serves, not every object it ever made.

moto registers every instance of its models on the model's class (the list behind
``/moto-api/data.json``) and never lets one go. Each ``TransactWriteItems`` deep-copies
every table it touches (to roll back), so each transaction kept a whole copy of its
table: an hour of workers grew the enforcing emulator to 11.7 GB.
``workflows.local.server.track_live_models_only`` makes the registry hold its instances
weakly. The test drives a worker's request mix under an IAM user's keys and counts,
through ``data.json``, what the registry still holds.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any, Iterator

import pytest

pytestmark = pytest.mark.e2e
pytest.importorskip("moto", reason="SKIPPED LOUDLY: moto is not installed (pip install -e '.[dev]')")

REGION = "us-east-1"
TABLE, QUEUE, BUCKET = "mem-runs", "mem-queue", "mem-payloads"
ITEMS = 30  # items the table holds
TRANSACTIONS = 40
MESSAGES = 30  # each sent, received and deleted
OVERWRITES = 20  # puts of one S3 key


def _policy(account: str) -> dict[str, Any]:
    table = f"arn:aws:dynamodb:{REGION}:{account}:table/{TABLE}"
    return {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Resource": [table, f"{table}/index/*"],
         "Action": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query",
                    "dynamodb:ConditionCheckItem"]},
        {"Effect": "Allow", "Resource": f"arn:aws:sqs:{REGION}:{account}:{QUEUE}",
         "Action": ["sqs:GetQueueUrl", "sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage"]},
        {"Effect": "Allow", "Resource": f"arn:aws:s3:::{BUCKET}/*", "Action": ["s3:PutObject"]}]}


@pytest.fixture(scope="module")
def emulator() -> Iterator[tuple[Any, dict[str, str]]]:
    """The enforcing emulator, its table, queue and bucket, and a worker's keys."""
    import boto3

    from workflows.local.iam import EnforcedLocalAWS

    with EnforcedLocalAWS() as aws:
        def admin(service: str) -> Any:
            return boto3.client(service, endpoint_url=aws.url, region_name=REGION,
                                aws_access_key_id=aws.admin["AWS_ACCESS_KEY_ID"],
                                aws_secret_access_key=aws.admin["AWS_SECRET_ACCESS_KEY"])

        admin("dynamodb").create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}])
        admin("sqs").create_queue(QueueName=QUEUE)
        admin("s3").create_bucket(Bucket=BUCKET)
        account = admin("sts").get_caller_identity()["Account"]
        iam = admin("iam")
        arn = iam.create_policy(PolicyName="WorkerPolicy", PolicyDocument=json.dumps(_policy(account)))["Policy"]["Arn"]
        iam.create_user(UserName="Worker")
        iam.attach_user_policy(UserName="Worker", PolicyArn=arn)
        key = iam.create_access_key(UserName="Worker")["AccessKey"]
        yield aws, {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}


def _registry(url: str) -> dict[str, dict[str, list[Any]]]:
    """The instances moto's registry holds, by service and model (``/moto-api/data.json``)."""
    with urllib.request.urlopen(f"{url}/moto-api/data.json", timeout=60) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_the_registry_holds_only_live_objects_after_a_workers_requests(emulator: tuple[Any, dict[str, str]]) -> None:
    import boto3

    aws, keys = emulator
    ddb, sqs, s3 = (boto3.client(service, endpoint_url=aws.url, region_name=REGION, **keys)
                    for service in ("dynamodb", "sqs", "s3"))
    for n in range(ITEMS):
        ddb.put_item(TableName=TABLE, Item={"pk": {"S": f"run-{n}"}, "sk": {"S": "meta"}, "v": {"S": "x" * 200}})
    for n in range(TRANSACTIONS):
        run = {"S": f"run-{n % ITEMS}"}
        ddb.transact_write_items(TransactItems=[
            {"Update": {"TableName": TABLE, "Key": {"pk": run, "sk": {"S": "meta"}}, "UpdateExpression": "SET n = :n",
                        "ExpressionAttributeValues": {":n": {"N": str(n)}}}},
            {"ConditionCheck": {"TableName": TABLE, "Key": {"pk": {"S": f"run-{(n + 1) % ITEMS}"}, "sk": {"S": "meta"}},
                                "ConditionExpression": "attribute_exists(pk)"}}])
        ddb.get_item(TableName=TABLE, Key={"pk": run, "sk": {"S": "meta"}})
        ddb.query(TableName=TABLE, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": run})
    url = sqs.get_queue_url(QueueName=QUEUE)["QueueUrl"]
    for n in range(MESSAGES):
        sqs.send_message(QueueUrl=url, MessageBody=f"message {n}")
        for message in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []):
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    for _ in range(OVERWRITES):
        s3.put_object(Bucket=BUCKET, Key="payload", Body=b"y" * 3000)

    registry = _registry(aws.url)
    held = {"tables": len(registry["dynamodb"]["Table"]), "items": len(registry["dynamodb"]["Item"]),
            "messages": len(registry["sqs"].get("Message", [])), "objects": len(registry["s3"]["FakeKey"])}
    # Without the fix: a copy of the table per transaction item, each copy's items and
    # each read's, every deleted message, every overwritten object.
    assert held == {"tables": 1, "items": ITEMS, "messages": 0, "objects": 1}
