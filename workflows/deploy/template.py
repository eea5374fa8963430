"""The CloudFormation template of a deployment: tables, queues and one IAM policy per process.

Built from :mod:`workflows.deploy.resources`, the description ``workflows init-aws`` uses.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from workflows.core.storage.payloads import KEY_PREFIX as PAYLOAD_PREFIX
from workflows.errors import ConfigurationError
from workflows.settings import Settings

from .payloads import ENDED_TAG, LIFECYCLE_RULE_ID
from .policies import ROLES, policy_document
from .resources import (
    BILLING_MODE,
    DLQ_RETENTION_SECONDS,
    MAX_MESSAGE_BYTES,
    MAX_RECEIVE_COUNT,
    QueueSpec,
    TableSpec,
    queue_specs,
    table_specs,
)

NO_VALUE = {"Ref": "AWS::NoValue"}
MAX_VISIBILITY_TIMEOUT = 43200  # 12 hours, the SQS maximum


def logical_id(name: str, kind: str) -> str:
    """A CloudFormation logical id for a resource named ``name`` (``steps`` -> ``StepsQueue``)."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name) if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) + kind


def _unique_ids(names: Iterable[str], kind: str) -> dict[str, str]:
    ids: dict[str, str] = {}
    for name in names:
        lid = logical_id(name, kind)
        if lid in ids.values() or lid == "DeadLetterQueue":
            raise ConfigurationError(f"the {kind.lower()} name {name!r} maps to the CloudFormation id {lid!r}, "
                                     "which another name already uses; rename one of them")
        ids[name] = lid
    return ids


def _parameters(settings: Settings) -> dict[str, Any]:
    return {
        "TablePrefix": {"Type": "String", "Default": settings.table_prefix, "AllowedPattern": "[a-zA-Z0-9_.-]*",
                        "Description": "prefix of every table name (WORKFLOWS_TABLE_PREFIX of every process)"},
        "QueuePrefix": {"Type": "String", "Default": settings.queue_prefix, "AllowedPattern": "[a-zA-Z0-9_-]*",
                        "Description": "prefix of every queue name (WORKFLOWS_QUEUE_PREFIX of every process)"},
        "BillingMode": {"Type": "String", "Default": BILLING_MODE, "AllowedValues": ["PAY_PER_REQUEST", "PROVISIONED"],
                        "Description": "DynamoDB capacity mode of every table and index"},
        "ReadCapacityUnits": {"Type": "Number", "Default": 5, "MinValue": 1,
                              "Description": "read capacity of each table and index (PROVISIONED only)"},
        "WriteCapacityUnits": {"Type": "Number", "Default": 5, "MinValue": 1,
                               "Description": "write capacity of each table and index (PROVISIONED only)"},
        "PointInTimeRecovery": {"Type": "String", "Default": "true", "AllowedValues": ["true", "false"],
                                "Description": "continuous backups of every table"},
        "VisibilityTimeout": {"Type": "Number", "Default": settings.visibility_timeout, "MinValue": 1,
                              "MaxValue": MAX_VISIBILITY_TIMEOUT,
                              "Description": "SQS visibility timeout, seconds (WORKFLOWS_VISIBILITY_TIMEOUT)"},
        "MaxReceiveCount": {"Type": "Number", "Default": MAX_RECEIVE_COUNT, "MinValue": 1, "MaxValue": 1000,
                            "Description": "deliveries of one message before it goes to the dead-letter queue"},
        "PayloadBucketName": {"Type": "String", "Default": settings.bucket,
                          "AllowedPattern": "[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]",
                          "Description": "S3 bucket of large payloads, globally unique (WORKFLOWS_PAYLOAD_BUCKET)"},
        "PayloadExpiryDays": {"Type": "Number", "Default": settings.payload_expiry, "MinValue": 1,
                              "Description": "days after beat's retention sweep marked an ended run's payload "
                                             "objects ended that they expire; at least the retention in days "
                                             "(WORKFLOWS_PAYLOAD_EXPIRY_DAYS)"},
    }


def _throughput() -> dict[str, Any]:
    return {"Fn::If": ["Provisioned", {"ReadCapacityUnits": {"Ref": "ReadCapacityUnits"},
                                       "WriteCapacityUnits": {"Ref": "WriteCapacityUnits"}}, NO_VALUE]}


def _key_schema(hash_key: str, range_key: str | None) -> list[dict[str, str]]:
    keys = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    return keys + ([{"AttributeName": range_key, "KeyType": "RANGE"}] if range_key else [])


def table_resource(spec: TableSpec) -> dict[str, Any]:
    """The ``AWS::DynamoDB::Table`` of ``spec`` (kept when the stack is deleted or replaces it)."""
    props: dict[str, Any] = {
        "TableName": {"Fn::Sub": "${TablePrefix}" + spec.name},
        "BillingMode": {"Ref": "BillingMode"},
        "ProvisionedThroughput": _throughput(),
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t in spec.attribute_types],
        "KeySchema": _key_schema(spec.hash_key, spec.range_key),
        "PointInTimeRecoverySpecification": {
            "PointInTimeRecoveryEnabled": {"Fn::If": ["PointInTimeRecovery", True, False]}},
    }
    if spec.indexes:
        props["GlobalSecondaryIndexes"] = [{
            "IndexName": index.name,
            "KeySchema": _key_schema(index.hash_key, index.range_key),
            "Projection": {"ProjectionType": index.projection,
                           **({"NonKeyAttributes": list(index.non_key_attributes)}
                              if index.non_key_attributes else {})},
            "ProvisionedThroughput": _throughput(),
        } for index in spec.indexes]
    if spec.ttl_attribute:
        props["TimeToLiveSpecification"] = {"AttributeName": spec.ttl_attribute, "Enabled": True}
    return {"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
            "Properties": props}


def queue_resource(spec: QueueSpec, dead_letter_id: str) -> dict[str, Any]:
    """The ``AWS::SQS::Queue`` of ``spec``: a work queue redrives to the dead-letter queue."""
    props: dict[str, Any] = {"QueueName": {"Fn::Sub": "${QueuePrefix}" + spec.name},
                             "VisibilityTimeout": {"Ref": "VisibilityTimeout"}, "MaximumMessageSize": MAX_MESSAGE_BYTES}
    if spec.dead_letter:
        props["MessageRetentionPeriod"] = DLQ_RETENTION_SECONDS
    else:
        props["RedrivePolicy"] = {"deadLetterTargetArn": {"Fn::GetAtt": [dead_letter_id, "Arn"]},
                                  "maxReceiveCount": {"Ref": "MaxReceiveCount"}}
    return {"Type": "AWS::SQS::Queue", "Properties": props}


def bucket_resource() -> dict[str, Any]:
    """The ``AWS::S3::Bucket`` of large payloads: private, encrypted, objects of ended runs expiring."""
    return {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain", "Properties": {
        "BucketName": {"Ref": "PayloadBucketName"},
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
        "BucketEncryption": {"ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
        "LifecycleConfiguration": {"Rules": [{
            "Id": LIFECYCLE_RULE_ID, "Status": "Enabled", "Prefix": PAYLOAD_PREFIX,
            "TagFilters": [{"Key": ENDED_TAG, "Value": "true"}],  # only objects of ended runs (deploy/payloads.py)
            "ExpirationInDays": {"Ref": "PayloadExpiryDays"},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]},
    }}


def build_template(settings: Settings, extra_queues: Iterable[str] = ()) -> dict[str, Any]:
    """The template of a deployment with ``settings``' prefixes as defaults.

    Args:
        settings: its prefixes and visibility timeout become the parameters' defaults.
        extra_queues: step queues beyond ``workflows`` and ``steps`` (each ``queue=`` of the imported steps).
    """
    tables = table_specs(settings)
    queues = queue_specs(extra_queues)
    table_ids = _unique_ids([t.name for t in tables], "Table")
    work = [q for q in queues if not q.dead_letter]
    queue_ids = _unique_ids([q.name for q in work], "Queue")
    dead_letter = next(q for q in queues if q.dead_letter)
    resources: dict[str, Any] = {table_ids[t.name]: table_resource(t) for t in tables}
    resources["DeadLetterQueue"] = queue_resource(dead_letter, "DeadLetterQueue")
    resources.update({queue_ids[q.name]: queue_resource(q, "DeadLetterQueue") for q in work})
    resources["PayloadBucket"] = bucket_resource()
    indexed = {t.name for t in tables if t.indexes}
    outputs: dict[str, Any] = {}
    for role in ROLES:
        resources[role.key + "Policy"] = {"Type": "AWS::IAM::ManagedPolicy", "Properties": {
            "Description": role.description,
            "PolicyDocument": policy_document(role, table_ids, indexed, queue_ids, "DeadLetterQueue",
                                              "PayloadBucket")}}
        outputs[role.key + "PolicyArn"] = {"Description": f"attach to the role of: {role.description}",
                                           "Value": {"Ref": role.key + "Policy"}}
    outputs["TablePrefix"] = {"Description": "WORKFLOWS_TABLE_PREFIX", "Value": {"Ref": "TablePrefix"}}
    outputs["QueuePrefix"] = {"Description": "WORKFLOWS_QUEUE_PREFIX", "Value": {"Ref": "QueuePrefix"}}
    outputs["PayloadBucket"] = {"Description": "WORKFLOWS_PAYLOAD_BUCKET", "Value": {"Ref": "PayloadBucket"}}
    outputs["DeadLetterQueueUrl"] = {"Description": "poison messages", "Value": {"Ref": "DeadLetterQueue"}}
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "celery-durable-workflows: tables, queues, payload bucket, one IAM managed policy per process",
        "Parameters": _parameters(settings),
        "Conditions": {"Provisioned": {"Fn::Equals": [{"Ref": "BillingMode"}, "PROVISIONED"]},
                       "PointInTimeRecovery": {"Fn::Equals": [{"Ref": "PointInTimeRecovery"}, "true"]}},
        "Resources": resources,
        "Outputs": outputs,
    }


def render(template: dict[str, Any]) -> str:
    """The template as JSON text (CloudFormation reads JSON and YAML alike)."""
    return json.dumps(template, indent=2) + "\n"
