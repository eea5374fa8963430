"""Static checks of the generated policy documents, for what an emulator cannot prove.

tests/deploy/test_iam_enforced.py runs every process under its policy on moto, with the
DynamoDB and GetQueueUrl resource rules of :mod:`workflows.local.iam`. Stock moto checks
DynamoDB actions against ``*`` and a transaction as ``TransactWriteItems``; these tests
hold the documents to AWS's rules directly. Which actions on which tables each role holds is
test_policy_coverage.py's: exactly the item actions its code's requests and transactions need.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workflows.deploy.policies import ROLES
from workflows.deploy.template import build_template
from workflows.local.iam import dynamodb_checks, s3_checks
from workflows.settings import Settings

TEMPLATE = build_template(Settings(table_prefix="tp-", queue_prefix="qp-"), ["payments"])
TABLES = {lid for lid, r in TEMPLATE["Resources"].items() if r["Type"] == "AWS::DynamoDB::Table"}
QUEUES = {lid for lid, r in TEMPLATE["Resources"].items() if r["Type"] == "AWS::SQS::Queue"}


def _statements(role: str) -> list[dict[str, Any]]:
    return list(TEMPLATE["Resources"][role + "Policy"]["Properties"]["PolicyDocument"]["Statement"])


def _grants(role: str) -> dict[str, set[str]]:
    """Logical id of a table or queue (``Id`` or ``Id/index/*``) -> the actions ``role`` has on it."""
    grants: dict[str, set[str]] = {}
    for statement in _statements(role):
        for resource in statement["Resource"] if isinstance(statement["Resource"], list) else []:
            if "Fn::GetAtt" in resource:
                key = resource["Fn::GetAtt"][0]
            else:
                key = resource["Fn::Sub"].replace("${", "").replace(".Arn}", "")
            grants.setdefault(key, set()).update(statement["Action"])
    return grants


@pytest.mark.parametrize("role", [r.key for r in ROLES])
def test_every_resource_is_one_of_the_stacks_tables_queues_or_bucket(role: str) -> None:
    for key, actions in _grants(role).items():
        stem = key.split("/", 1)[0]
        assert stem in TABLES | QUEUES | {"PayloadBucket"}, (role, key)
        if "/index/" in key:  # an index ARN is there only for a query or scan of it
            assert stem in TABLES and actions & {"dynamodb:Query", "dynamodb:Scan"}, (role, key)


def test_no_policy_names_an_action_iam_does_not_have() -> None:
    # cfn-lint's list of every IAM action: TransactWriteItems is not one (moto nonetheless checks it).
    import cfnlint

    known = json.loads((Path(cfnlint.__file__).parent / "data/AdditionalSpecs/Policies.json").read_text())
    for role in ROLES:
        for statement in _statements(role.key):
            for action in [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]:
                service, name = action.split(":")
                assert name.lower() in known[service]["Actions"], (role.key, action)
                assert action != "dynamodb:TransactWriteItems"


def test_senders_may_read_every_work_queues_attributes() -> None:
    for role in ("Worker", "Beat", "Client", "HookEndpoint"):
        grants = _grants(role)
        for queue in QUEUES - {"DeadLetterQueue"}:
            assert {"sqs:SendMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"} <= grants[queue], (role, queue)


def test_the_client_and_hook_endpoint_cannot_write_history() -> None:
    for role in ("Client", "HookEndpoint"):
        assert not _grants(role).get("HistoryTable", set()) - {"dynamodb:GetItem", "dynamodb:BatchGetItem",
                                                               "dynamodb:Query"}, role
    assert _grants("Operator")["HistoryTable"] == {"dynamodb:BatchWriteItem"}


def test_the_emulators_checks_are_awss_item_actions() -> None:
    arn = "arn:aws:dynamodb:r:1:table/"
    transaction = {"TransactItems": [{"Put": {"TableName": "a"}}, {"Update": {"TableName": "b"}},
                                     {"ConditionCheck": {"TableName": "a"}}, {"Delete": {"TableName": "c"}}]}
    assert list(dynamodb_checks("TransactWriteItems", transaction, arn)) == [
        ("PutItem", arn + "a"), ("UpdateItem", arn + "b"), ("ConditionCheckItem", arn + "a"), ("DeleteItem", arn + "c")]
    assert list(dynamodb_checks("Query", {"TableName": "a", "IndexName": "by_x"}, arn)) == [
        ("Query", arn + "a/index/by_x")]
    assert list(dynamodb_checks("BatchWriteItem", {"RequestItems": {"a": [], "b": []}}, arn)) == [
        ("BatchWriteItem", arn + "a"), ("BatchWriteItem", arn + "b")]
    assert list(dynamodb_checks("ListTables", {}, arn)) == [("ListTables", "*")]


def test_the_emulators_s3_checks_are_awss_iam_actions() -> None:
    # AWS authorises a copy by reading its source and writing its target (and tagging it when
    # the copy replaces the tags), a listing by s3:ListBucket on the bucket.
    copy = {"x-amz-copy-source": "/b/payloads/r1/abc", "x-amz-tagging-directive": "REPLACE"}
    assert list(s3_checks("CopyObject", "b", "payloads/r2/abc", copy)) == [
        ("GetObject", "arn:aws:s3:::b/payloads/r1/abc"), ("PutObject", "arn:aws:s3:::b/payloads/r2/abc"),
        ("PutObjectTagging", "arn:aws:s3:::b/payloads/r2/abc")]
    assert list(s3_checks("CopyObject", "b", "k2", {"x-amz-copy-source": "b/k%201?versionId=3"})) == [
        ("GetObject", "arn:aws:s3:::b/k 1"), ("PutObject", "arn:aws:s3:::b/k2")]
    assert list(s3_checks("ListObjectsV2", "b", None, {})) == [("ListBucket", "arn:aws:s3:::b")]
    assert list(s3_checks("GetObject", "b", "k", {})) == [("GetObject", "arn:aws:s3:::b/k")]


def test_the_worker_may_delete_signals_and_beat_may_copy_history_in_batches() -> None:
    """A continue-as-new after a signal deletes the taken signals with BatchWriteItem (Worker); a
    rerun batch that beat drives copies history with it (Beat): both were missing (every such
    resume failed 403, and the batch never moved)."""
    assert "dynamodb:BatchWriteItem" in _grants("Worker")["SignalsTable"]
    assert "dynamodb:BatchWriteItem" in _grants("Beat")["HistoryTable"]
    assert "dynamodb:BatchWriteItem" not in _grants("Worker").get("HistoryTable", set())
