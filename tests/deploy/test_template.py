"""The CloudFormation template: valid for cfn-lint, the tables of the models, least-privilege policies."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pynamodb.attributes import TTLAttribute, UnicodeAttribute
from pynamodb.models import Model

from persistence.models import build_models
from workflows.celery.deadletter import REDRIVEN, describe_letter
from workflows.deploy.policies import ROLES
from workflows.deploy.resources import MAX_RECEIVE_COUNT, table_spec
from workflows.deploy.stack import MAX_TEMPLATE_BODY, compact
from workflows.deploy.template import build_template, logical_id, render, table_resource
from workflows.errors import ConfigurationError, DeploymentError
from workflows.settings import Settings

SETTINGS = Settings(table_prefix="tp-", queue_prefix="qp-")


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return build_template(SETTINGS, ["workflows", "steps", "payments"])


def of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_cfn_lint_finds_nothing(template: dict[str, Any]) -> None:
    from cfnlint.api import ManualArgs, lint

    matches = lint(render(template), config=ManualArgs(regions=["us-east-1", "eu-west-1"]))
    assert [str(m) for m in matches] == []


def test_every_model_is_a_table_with_its_key_and_indexes(template: dict[str, Any]) -> None:
    tables = {t["Properties"]["TableName"]["Fn::Sub"]: t for t in of_type(template, "AWS::DynamoDB::Table").values()}
    models = build_models(SETTINGS).all()
    assert sorted(tables) == sorted("${TablePrefix}" + m.Meta.table_name[len("tp-"):] for m in models)
    runs = tables["${TablePrefix}runs"]["Properties"]
    assert runs["KeySchema"] == [{"AttributeName": "run_id", "KeyType": "HASH"}]
    indexes = {i["IndexName"]: i for i in runs["GlobalSecondaryIndexes"]}
    assert sorted(indexes) == ["by_lease", "by_retention", "by_status", "by_workflow"]
    assert indexes["by_lease"]["KeySchema"] == [{"AttributeName": "lease_shard", "KeyType": "HASH"},
                                                {"AttributeName": "lease_expires_at", "KeyType": "RANGE"}]
    assert indexes["by_lease"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    history = tables["${TablePrefix}history"]["Properties"]
    assert history["KeySchema"][1] == {"AttributeName": "seq", "KeyType": "RANGE"}
    assert "GlobalSecondaryIndexes" not in history


def test_tables_are_kept_backed_up_and_follow_the_capacity_mode(template: dict[str, Any]) -> None:
    for table in of_type(template, "AWS::DynamoDB::Table").values():
        assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"
        props = table["Properties"]
        assert props["BillingMode"] == {"Ref": "BillingMode"}
        assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]["Fn::If"][0] == \
            "PointInTimeRecovery"
        for index in props.get("GlobalSecondaryIndexes", []):
            assert index["ProvisionedThroughput"]["Fn::If"][0] == "Provisioned"
        # Every table expires items by its retain_until attribute (docs/retention.md); schedules and
        # timers never set it, so TTL is on there too and deletes nothing.
        assert props["TimeToLiveSpecification"] == {"AttributeName": "retain_until", "Enabled": True}
    assert template["Parameters"]["BillingMode"]["Default"] == "PAY_PER_REQUEST"
    assert template["Parameters"]["TablePrefix"]["Default"] == "tp-"


def test_a_ttl_attribute_becomes_the_tables_time_to_live() -> None:
    class Expiring(Model):
        class Meta:
            table_name = "tp-expiring"

        key = UnicodeAttribute(hash_key=True)
        expires = TTLAttribute(attr_name="expires_at")

    props = table_resource(table_spec(Expiring, "tp-"))["Properties"]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert props["TableName"] == {"Fn::Sub": "${TablePrefix}expiring"}


def test_work_queues_redrive_to_the_dead_letter_queue(template: dict[str, Any]) -> None:
    queues = of_type(template, "AWS::SQS::Queue")
    assert sorted(queues) == ["DeadLetterQueue", "PaymentsQueue", "StepsQueue", "WorkflowsQueue"]
    for lid, queue in queues.items():
        props = queue["Properties"]
        assert props["VisibilityTimeout"] == {"Ref": "VisibilityTimeout"}
        if lid == "DeadLetterQueue":
            assert "RedrivePolicy" not in props and props["MessageRetentionPeriod"] == 14 * 24 * 3600
        else:
            assert props["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
                                              "maxReceiveCount": {"Ref": "MaxReceiveCount"}}
    assert template["Parameters"]["MaxReceiveCount"]["Default"] == MAX_RECEIVE_COUNT


def _statements(template: dict[str, Any], role: str) -> dict[str, dict[str, Any]]:
    doc = template["Resources"][role + "Policy"]["Properties"]["PolicyDocument"]
    return {s["Sid"]: s for s in doc["Statement"]}


def _tables(statement: dict[str, Any]) -> set[str]:
    return {r["Fn::GetAtt"][0] for r in statement["Resource"] if "Fn::GetAtt" in r}


def test_one_managed_policy_per_process(template: dict[str, Any]) -> None:
    policies = of_type(template, "AWS::IAM::ManagedPolicy")
    assert sorted(policies) == sorted(r.key + "Policy" for r in ROLES)
    assert sorted(policies) == ["BeatPolicy", "ClientPolicy", "HookEndpointPolicy", "OperatorPolicy", "WorkerPolicy"]
    for name in policies:
        assert template["Outputs"][name + "Arn"]["Value"] == {"Ref": name}


def test_policies_grant_only_what_each_process_needs(template: dict[str, Any]) -> None:
    """The shape of each policy (which action on which table: test_policy_coverage.py)."""
    worker, beat = _statements(template, "Worker"), _statements(template, "Beat")
    client, hooks = _statements(template, "Client"), _statements(template, "HookEndpoint")
    operator = _statements(template, "Operator")
    assert "sqs:ReceiveMessage" in worker["Queues"]["Action"]
    assert "sqs:ReceiveMessage" not in beat["Queues"]["Action"]
    assert "sqs:ReceiveMessage" not in client["Queues"]["Action"]
    assert "HistoryTable" not in _tables(client["PutItem"]) | _tables(client["UpdateItem"])
    assert _tables(client["DeleteItem"]) == {"SchedulesTable", "BatchesTable"}  # an ended batch moves
    assert _tables(hooks["UpdateItem"]) == {"HooksTable", "RunsTable"}
    assert "DeleteItem" not in hooks and "PutItem" not in hooks and "DeadLetters" not in hooks
    assert _tables(worker["DeadLetters"]) == {"DeadLetterQueue"}
    assert "DeadLetterQueue" not in _tables(worker["Queues"])
    assert _tables(operator["BatchWriteItem"]) == {"HistoryTable"}
    assert _tables(operator["Scan"]) == {"RunsTable", "TagsTable"}
    assert "sqs:PurgeQueue" in operator["DeadLetters"]["Action"] and "Queues" not in operator
    for role in ROLES:
        for statement in _statements(template, role.key).values():
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert all("*" not in a for a in actions), (role.key, actions)
            assert role.key == "Operator" or "dynamodb:Scan" not in actions, (role.key, actions)
            if statement["Resource"] == "*":
                assert actions == ["sqs:ListQueues"], (role.key, statement)


def test_logical_ids_and_their_collisions() -> None:
    assert logical_id("payments", "Queue") == "PaymentsQueue"
    assert logical_id("bulk-email.v2", "Queue") == "BulkEmailV2Queue"
    with pytest.raises(ConfigurationError, match="bulk_email"):
        build_template(SETTINGS, ["bulk-email", "bulk_email"])


def test_deploy_refuses_a_template_that_is_not_json_or_too_large() -> None:
    with pytest.raises(DeploymentError, match="not JSON"):
        compact("Resources: {}")
    big = json.dumps({"Description": "x" * (MAX_TEMPLATE_BODY + 1)})
    with pytest.raises(DeploymentError, match="inline limit"):
        compact(big)
    assert len(compact(render(build_template(SETTINGS, ["a", "b", "c", "d"])))) < MAX_TEMPLATE_BODY


def test_a_redriven_celery_message_is_listed_as_such() -> None:
    celery_message = {"headers": {"task": "workflows.resume", "id": "t-1"}, "body": "..."}
    body = base64.b64encode(json.dumps(celery_message).encode()).decode()
    letter = describe_letter(body)
    assert letter["reason"] == REDRIVEN and letter["task"] == "workflows.resume" and letter["task_id"] == "t-1"
    own = {"reason": "unknown task: x", "body": "{}"}
    assert describe_letter(json.dumps(own)) == own


def test_the_payload_bucket_is_private_and_its_objects_expire(template: dict[str, Any]) -> None:
    [(bucket_id, bucket)] = of_type(template, "AWS::S3::Bucket").items()
    props = bucket["Properties"]
    assert template["Parameters"]["PayloadBucketName"]["Default"] == "tp-payloads"
    assert props["PublicAccessBlockConfiguration"]["BlockPublicPolicy"] is True
    [rule] = props["LifecycleConfiguration"]["Rules"]
    assert (rule["Prefix"], rule["ExpirationInDays"]) == ("payloads/", {"Ref": "PayloadExpiryDays"})
    assert rule["TagFilters"] == [{"Key": "workflows-ended", "Value": "true"}]  # only objects of ended runs
    grants = {}
    for policy_id, policy in of_type(template, "AWS::IAM::ManagedPolicy").items():
        statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
        payloads = statements["Payloads"]
        assert payloads["Resource"] == [{"Fn::Sub": "${" + bucket_id + ".Arn}/payloads/*"}]
        grants[policy_id] = sorted(payloads["Action"])
        if "PayloadBucket" in statements:  # listing a prefix: on the bucket itself
            assert statements["PayloadBucket"]["Resource"] == [{"Fn::GetAtt": [bucket_id, "Arn"]}]
            grants[policy_id + ":bucket"] = statements["PayloadBucket"]["Action"]
    engine = ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"]  # copies replace tags (adopt, mark ended)
    assert grants == {"WorkerPolicy": engine, "BeatPolicy": engine, "BeatPolicy:bucket": ["s3:ListBucket"],
                      "ClientPolicy": ["s3:GetObject", "s3:PutObject"], "HookEndpointPolicy": ["s3:PutObject"],
                      # attached with ClientPolicy: a fork's copies, and what 'payloads orphans' does beyond it
                      "OperatorPolicy": ["s3:DeleteObject", "s3:PutObjectTagging"],
                      "OperatorPolicy:bucket": ["s3:ListBucket"]}
