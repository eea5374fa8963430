"""The template deployed as a stack on the moto server creates what ``workflows init-aws`` creates."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest

from workflows.cli import main
from workflows.deploy.queues import ensure_queues
from workflows.deploy.resources import queue_specs
from workflows.deploy.stack import deploy_stack
from workflows.settings import Settings, configure


@pytest.fixture()
def as_settings(aws_env: dict[str, str]) -> Iterator[Any]:
    """Run code under other settings (prefixes), then restore the session's."""
    def use(settings: Settings) -> None:
        configure(settings)

    yield use
    configure(Settings.from_env())


def _clients(aws_env: dict[str, str]) -> tuple[Any, Any]:
    kw = {"endpoint_url": aws_env["AWS_ENDPOINT_URL"], "region_name": aws_env["AWS_DEFAULT_REGION"]}
    return boto3.client("dynamodb", **kw), boto3.client("sqs", **kw)


def _tables(ddb: Any, prefix: str) -> dict[str, Any]:
    names = [n for n in ddb.list_tables(Limit=100)["TableNames"] if n.startswith(prefix)]
    shapes = {}
    for name in names:
        table = ddb.describe_table(TableName=name)["Table"]
        shapes[name[len(prefix):]] = {
            "key": table["KeySchema"],
            "attributes": sorted((a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]),
            "billing": table.get("BillingModeSummary", {}).get("BillingMode"),
            "indexes": sorted((i["IndexName"], json.dumps(i["KeySchema"]), i["Projection"]["ProjectionType"],
                               tuple(sorted(i["Projection"].get("NonKeyAttributes", []))))
                              for i in table.get("GlobalSecondaryIndexes", [])),
        }
    return shapes


def _queues(sqs: Any, prefix: str) -> dict[str, Any]:
    shapes = {}
    for url in sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls", []):
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        redrive = json.loads(attrs["RedrivePolicy"]) if "RedrivePolicy" in attrs else None
        shapes[url.rsplit("/", 1)[-1][len(prefix):]] = {
            "visibility": attrs["VisibilityTimeout"], "retention": attrs["MessageRetentionPeriod"],
            "redrive": redrive and (redrive["deadLetterTargetArn"].rsplit(":", 1)[-1][len(prefix):],
                                    int(redrive["maxReceiveCount"])),
        }
    return shapes


def test_stack_and_init_aws_create_the_same_tables_and_queues(aws_env, as_settings, tmp_path: Path,
                                                                capsys) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    imperative = Settings.from_env().with_(table_prefix=f"ia{tag}-", queue_prefix=f"ia{tag}-")
    as_settings(imperative)
    assert main(["init-aws"]) == 0
    template = tmp_path / "stack.json"
    assert main(["aws", "template", "--output", str(template)]) == 0
    out = capsys.readouterr().out
    assert "created  ia" in out and "dlq" in out

    stacked = f"cf{tag}-"
    result = deploy_stack(imperative, f"stack-{tag}", template.read_text(),
                          {"TablePrefix": stacked, "QueuePrefix": stacked, "PayloadBucketName": f"{stacked}payloads"})
    assert result.action == "created"
    assert result.outputs["TablePrefix"] == stacked
    assert {"WorkerPolicyArn", "BeatPolicyArn", "ClientPolicyArn", "HookEndpointPolicyArn"} <= set(result.outputs)

    ddb, sqs = _clients(aws_env)
    by_init, by_stack = _tables(ddb, imperative.table_prefix), _tables(ddb, stacked)
    assert len(by_init) == 8 and by_stack == by_init
    assert by_init["runs"]["billing"] == "PAY_PER_REQUEST"
    queues_init, queues_stack = _queues(sqs, imperative.queue_prefix), _queues(sqs, stacked)
    assert {"dlq", "workflows", "steps"} < set(queues_init)  # and the queue= of the imported steps
    assert queues_stack == queues_init
    assert queues_init["steps"]["redrive"] == ("dlq", 10) and queues_init["dlq"]["redrive"] is None
    s3 = boto3.client("s3", endpoint_url=aws_env["AWS_ENDPOINT_URL"], region_name=aws_env["AWS_DEFAULT_REGION"])
    assert result.outputs["PayloadBucket"] == f"{stacked}payloads"
    s3.head_bucket(Bucket=f"{stacked}payloads")  # (moto's CloudFormation leaves out its lifecycle rule)
    rules = s3.get_bucket_lifecycle_configuration(Bucket=imperative.bucket)["Rules"]
    assert [(r["ID"], r["Expiration"]["Days"]) for r in rules] == [
        ("expire-workflow-payloads", imperative.payload_expiry_days)]

    # A second init-aws changes nothing; deploying the same template again keeps every parameter
    # (AWS answers "no updates"; moto applies the update anyway) and so every resource.
    assert main(["init-aws"]) == 0
    assert "nothing to change" in capsys.readouterr().out
    again = deploy_stack(imperative, f"stack-{tag}", template.read_text())
    assert again.action in ("unchanged", "updated") and again.outputs["TablePrefix"] == stacked
    assert _tables(ddb, stacked) == by_init and _queues(sqs, stacked) == queues_init


def test_init_aws_adds_the_redrive_policy_to_queues_made_before_it(aws_env) -> None:  # type: ignore[no-untyped-def]
    from persistence.provision import create_queues

    old = Settings.from_env().with_(queue_prefix=f"old{uuid.uuid4().hex[:6]}-")
    create_queues(old, ["payments"])  # queues as earlier versions made them: no redrive
    report = dict(ensure_queues(old, queue_specs(["payments"])))
    prefix = old.queue_prefix
    assert report == {prefix + "dlq": "updated", prefix + "workflows": "updated", prefix + "steps": "updated",
                      prefix + "payments": "updated"}
    assert set(dict(ensure_queues(old, queue_specs(["payments"]))).values()) == {"exists"}
    _, sqs = _clients(aws_env)
    assert _queues(sqs, prefix)["payments"]["redrive"] == ("dlq", 10)
