"""The template's policy documents with their CloudFormation references resolved to real ARNs.

Only what the generated policies use is resolved: ``Fn::GetAtt [Id, Arn]`` of a table,
queue or bucket, and ``Fn::Sub "${Id.Arn}/..."``; parameters take their defaults.
"""

from __future__ import annotations

import re
from typing import Any


def _name(value: Any, parameters: dict[str, str]) -> str:
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return parameters[value["Ref"]]
    return re.sub(r"\$\{(\w+)\}", lambda m: parameters[m.group(1)], value["Fn::Sub"])


def resource_arns(template: dict[str, Any], region: str, account: str) -> dict[str, str]:
    """Logical id -> ARN of every table, queue and bucket of ``template``."""
    parameters = {k: str(v["Default"]) for k, v in template["Parameters"].items()}
    arns = {}
    for lid, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::DynamoDB::Table":
            arns[lid] = f"arn:aws:dynamodb:{region}:{account}:table/{_name(props['TableName'], parameters)}"
        elif resource["Type"] == "AWS::SQS::Queue":
            arns[lid] = f"arn:aws:sqs:{region}:{account}:{_name(props['QueueName'], parameters)}"
        elif resource["Type"] == "AWS::S3::Bucket":
            arns[lid] = f"arn:aws:s3:::{_name(props['BucketName'], parameters)}"
    return arns


def resolve(value: Any, arns: dict[str, str]) -> Any:
    """``value`` (a policy document or part of one) with every ARN reference replaced."""
    if isinstance(value, list):
        return [resolve(v, arns) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::GetAtt" in value:
        lid, attribute = value["Fn::GetAtt"]
        assert attribute == "Arn", value
        return arns[lid]
    if "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
        return re.sub(r"\$\{(\w+)\.Arn\}", lambda m: arns[m.group(1)], value["Fn::Sub"])
    return {k: resolve(v, arns) for k, v in value.items()}


def policies(template: dict[str, Any], region: str, account: str) -> dict[str, dict[str, Any]]:
    """Role key (``Worker``...) -> its policy document, resolved."""
    arns = resource_arns(template, region, account)
    return {lid[: -len("Policy")]: resolve(r["Properties"]["PolicyDocument"], arns)
            for lid, r in template["Resources"].items() if r["Type"] == "AWS::IAM::ManagedPolicy"}
