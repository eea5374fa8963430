"""The template deployed as a stack on the moto server creates what ``workflows init-aws`` creates."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest

from workflows.cli.commands import main
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
    pages = ddb.get_paginator("list_tables").paginate()  # the shared server holds hundreds of tables
    names = [n for page in pages for n in page["TableNames"] if n.startswith(prefix)]
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


def _ttl(ddb: Any, name: str) -> tuple[str, str | None]:
    described = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    return described["TimeToLiveStatus"], described.get("AttributeName")


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
    assert len(by_init) == 11 and by_stack == by_init
    # init-aws enables TTL on every table (the template declares it: moto's CloudFormation ignores it)
    assert {_ttl(ddb, imperative.table_prefix + name) for name in by_init} == {("ENABLED", "retain_until")}
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
        ("expire-workflow-payloads", imperative.payload_expiry)]

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


def test_init_aws_enables_ttl_on_every_table_made_without_it(aws_env, as_settings, capsys) -> None:  # type: ignore[no-untyped-def]
    from persistence.provision import create_tables

    old = Settings.from_env().with_(table_prefix=f"ttl{uuid.uuid4().hex[:6]}-")
    create_tables(old)
    ddb, _ = _clients(aws_env)
    names = sorted(_tables(ddb, old.table_prefix))
    for name in names:  # tables as earlier versions made them: TTL off
        ddb.update_time_to_live(TableName=old.table_prefix + name,
                                TimeToLiveSpecification={"Enabled": False, "AttributeName": "retain_until"})
    assert {_ttl(ddb, old.table_prefix + n)[0] for n in names} == {"DISABLED"}
    as_settings(old)
    assert main(["init-aws"]) == 0
    out = capsys.readouterr().out
    assert sorted(line.split()[1][len(old.table_prefix):] for line in out.splitlines()
                  if "(TTL retain_until)" in line) == names
    assert {name: _ttl(ddb, old.table_prefix + name) for name in names} == {
        name: ("ENABLED", "retain_until") for name in names}
    assert main(["init-aws"]) == 0  # enabled already: UpdateTimeToLive is not sent again (AWS refuses it)
    assert "(TTL retain_until)" not in capsys.readouterr().out


def test_init_aws_gives_every_queue_sqs_largest_message_size(aws_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A payload held inline (up to 256 KiB) travels base64-encoded, over a 256 KiB queue limit:
    init-aws raises the limit of queues made with it, and the template declares 1 MiB."""
    old = Settings.from_env().with_(queue_prefix=f"small{uuid.uuid4().hex[:6]}-")
    _, sqs = _clients(aws_env)
    made = sqs.create_queue(QueueName=old.queue_prefix + "steps", Attributes={"MaximumMessageSize": "262144"})
    ensure_queues(old, queue_specs([]))
    sizes = {url.rsplit("/", 1)[-1]: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["MaximumMessageSize"])[
        "Attributes"]["MaximumMessageSize"] for url in sqs.list_queues(QueueNamePrefix=old.queue_prefix)["QueueUrls"]}
    assert sizes[old.queue_prefix + "steps"] == "1048576" and set(sizes.values()) == {"1048576"}, (made, sizes)
    template = tmp_path / "stack.json"
    assert main(["aws", "template", "--output", str(template)]) == 0
    queues = [r for r in json.loads(template.read_text())["Resources"].values() if r["Type"] == "AWS::SQS::Queue"]
    assert queues and {q["Properties"]["MaximumMessageSize"] for q in queues} == {1048576}
