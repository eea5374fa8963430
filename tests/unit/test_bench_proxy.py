"""The counting front's request classification and item sizing (bench/proxy.py, bench/capacity.py)."""

from __future__ import annotations

import json

from bench.capacity import item_size, read_units, write_units
from bench.proxy import classify, role_of, system_of

SIGNED = "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=x"


def test_dynamodb_operation_and_table_come_from_the_target_header() -> None:
    body = json.dumps({"TableName": "wfb-runs", "Key": {"run_id": {"S": "r1"}}, "ConsistentRead": True}).encode()
    service, op, resource, parsed = classify({"X-Amz-Target": "DynamoDB_20120810.GetItem"}, body)
    assert (service, op, resource) == ("dynamodb", "GetItem", "wfb-runs")
    assert parsed["ConsistentRead"] is True
    assert system_of(resource) == "wfb"


def test_transactions_and_batches_name_their_first_table() -> None:
    body = json.dumps({"TransactItems": [{"Put": {"TableName": "wfb-history", "Item": {}}},
                                         {"Update": {"TableName": "wfb-runs", "Key": {}}}]}).encode()
    assert classify({"x-amz-target": "DynamoDB_20120810.TransactWriteItems"}, body)[:3] == (
        "dynamodb", "TransactWriteItems", "wfb-history")
    body = json.dumps({"RequestItems": {"celb-results": {"Keys": []}}}).encode()
    assert classify({"X-Amz-Target": "DynamoDB_20120810.BatchGetItem"}, body)[2] == "celb-results"


def test_sqs_json_protocol() -> None:
    body = json.dumps({"QueueUrl": "http://127.0.0.1:5000/123456789012/wfb-steps", "MessageBody": "x"}).encode()
    service, op, resource, _ = classify({"X-Amz-Target": "AmazonSQS.SendMessage"}, body)
    assert (service, op, system_of(resource)) == ("sqs", "SendMessage", "wfb")


def test_sqs_query_protocol_reads_the_action_parameter() -> None:
    body = b"Action=ReceiveMessage&QueueUrl=http%3A%2F%2F127.0.0.1%3A5000%2F123456789012%2Fpwb-pyworkflow-steps"
    headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8", "Authorization": SIGNED}
    service, op, resource, _ = classify(headers, body)
    assert (service, op, system_of(resource)) == ("sqs", "ReceiveMessage", "pwb")
    assert classify({"Authorization": SIGNED}, b"", "Action=DeleteMessage&QueueUrl=q")[:2] == ("sqs", "DeleteMessage")


def test_other_requests_are_not_aws_operations() -> None:
    assert classify({}, b"")[:2] == ("other", "other")


def test_role_comes_from_the_user_agent_app_id() -> None:
    assert role_of("Boto3/1.40 md/Botocore#1.40 ua/2.1 os/linux app/worker cfg/retry-mode#legacy") == "worker"
    assert role_of("PycURL/7.45 libcurl/8.0") == "kombu"
    assert role_of("Boto3/1.40 os/linux") == "other"


def test_item_size_follows_dynamodb_rules() -> None:
    assert item_size({"pk": {"S": "abc"}}) == 5
    assert item_size({"n": {"N": "12345"}}) == 1 + 4  # 3 significant-digit pairs rounded up, +1
    assert item_size({"b": {"BOOL": True}, "x": {"NULL": True}}) == 4
    assert item_size({"m": {"M": {"k": {"S": "vv"}}}}) == 1 + 3 + 1 + 1 + 2
    assert write_units(1024) == 1 and write_units(1025) == 2 and write_units(0) == 1
    assert read_units(4096, consistent=True) == 1.0 and read_units(5000, consistent=False) == 1.0
