"""Create or update the CloudFormation stack of a deployment (``workflows aws deploy``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

import boto3
from botocore.exceptions import BotoCoreError, ClientError, WaiterError
from botocore.parsers import ResponseParserError

from workflows.core.storage.aws_actions import aws_actions
from workflows.errors import DeploymentError
from workflows.settings import Settings

#: The largest template CloudFormation takes inline; larger ones must be uploaded to S3 first.
MAX_TEMPLATE_BODY = 51_200
CAPABILITIES = ["CAPABILITY_IAM"]  # the template creates IAM managed policies (without fixed names)


@dataclass(frozen=True)
class StackResult:
    """A deployed stack: what was done (``created``, ``updated``, ``unchanged``) and its outputs."""

    action: str
    outputs: dict[str, str]


def compact(template_text: str) -> str:
    """The template without whitespace, checked against the inline size limit.

    Raises:
        DeploymentError: the text is not a JSON template, or is too large to send inline.
    """
    try:
        body = json.dumps(json.loads(template_text), separators=(",", ":"))
    except ValueError as exc:
        raise DeploymentError(f"the template is not JSON (make it with `workflows aws template`): {exc}") from None
    if len(body) > MAX_TEMPLATE_BODY:
        raise DeploymentError(f"the template is {len(body)} bytes, over CloudFormation's inline limit of "
                              f"{MAX_TEMPLATE_BODY}: upload it to S3 and deploy it with the AWS CLI "
                              "(aws cloudformation deploy --s3-bucket ...)")
    return body


def _client(settings: Settings) -> Any:
    return boto3.client("cloudformation", region_name=settings.region, endpoint_url=settings.endpoint_url)


@aws_actions("cloudformation:DescribeStackEvents@stack")
def _failures(client: Any, stack_name: str) -> str:
    try:
        events = client.describe_stack_events(StackName=stack_name)["StackEvents"]
    except ClientError:
        return "no stack events could be read"
    failed = [f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason', e['ResourceStatus'])}"
              for e in events if e["ResourceStatus"].endswith("_FAILED")]
    return "; ".join(failed[:10]) or "no failed resource reported"


@aws_actions("cloudformation:DescribeStacks@stack")
def _exists(client: Any, stack_name: str) -> dict[str, Any] | None:
    try:
        stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise DeploymentError(f"cannot read stack {stack_name!r}: {exc}") from exc
    live = [s for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"]
    return live[0] if live else None


@aws_actions("cloudformation:CreateStack@stack", "cloudformation:UpdateStack@stack",
             "cloudformation:DescribeStacks@stack")
def deploy_stack(settings: Settings, stack_name: str, template_text: str,
                 parameters: Mapping[str, str] | None = None) -> StackResult:
    """Create the stack, or update it in place, and wait until it is done.

    Parameters not given keep their previous values on an update (their defaults on a create).
    An update replaces no table: tables are kept (``Retain``) even if a change would replace them.

    Raises:
        DeploymentError: the template was refused, or the stack failed (naming the resources).
    """
    body, given = compact(template_text), dict(parameters or {})
    declared = json.loads(body).get("Parameters", {})
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise DeploymentError(f"unknown template parameter(s): {', '.join(unknown)}; "
                              f"the template has: {', '.join(sorted(declared))}")
    client = _client(settings)
    current = _exists(client, stack_name)
    # Previous values are passed as values (the template has no NoEcho parameter to hide).
    previous = {p["ParameterKey"]: p["ParameterValue"] for p in (current or {}).get("Parameters", [])}
    kept = {k: previous[k] for k in declared if k not in given and k in previous}
    params = [{"ParameterKey": k, "ParameterValue": v} for k, v in {**kept, **given}.items()]
    try:
        if current is None:
            client.create_stack(StackName=stack_name, TemplateBody=body, Parameters=params,
                                Capabilities=CAPABILITIES)
            action, waiter = "created", "stack_create_complete"
        else:
            client.update_stack(StackName=stack_name, TemplateBody=body, Parameters=params,
                                Capabilities=CAPABILITIES)
            action, waiter = "updated", "stack_update_complete"
    except (ClientError, BotoCoreError, ResponseParserError) as exc:
        if "No updates are to be performed" not in str(exc):
            raise DeploymentError(f"CloudFormation refused stack {stack_name!r}: {exc}") from exc
        action, waiter = "unchanged", ""
    if waiter:
        try:
            client.get_waiter(waiter).wait(StackName=stack_name, WaiterConfig={"Delay": 2, "MaxAttempts": 900})
        except WaiterError as exc:
            raise DeploymentError(f"stack {stack_name!r} was not {action}: {_failures(client, stack_name)}") from exc
    stack = _exists(client, stack_name) or {}
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    return StackResult(action, outputs)
