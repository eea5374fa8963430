"""init-aws on tables of an earlier version: the listing indexes are re-keyed on the sharded
keys with UpdateTable, and runs stored before get their listing keys (over the moto server)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import boto3

from persistence import DynamoStore
from persistence.provision import create_tables
from persistence.reindex import ListingKeys
from workflows.cli.commands import main
from workflows.core.model.records import RunEnding, TimeRange
from workflows.core.storage.tags import index_sort_key
from workflows.deploy.indexes import ensure_indexes, index_plan, upgrade_indexes
from workflows.deploy.resources import table_specs
from workflows.settings import Settings, configure


def _old_index(name: str, hash_key: str, projection: list[str]) -> dict[str, Any]:
    return {"IndexName": name, "KeySchema": [{"AttributeName": hash_key, "KeyType": "HASH"},
                                             {"AttributeName": "created_at", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": projection}}


def _make_old_runs_table(client: Any, name: str) -> None:
    """The runs table as versions before the write-sharded listing keys made it."""
    types = [("run_id", "S"), ("status", "S"), ("workflow", "S"), ("created_at", "N"), ("lease_shard", "S"),
             ("lease_expires_at", "N")]
    client.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "run_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t in types],
        GlobalSecondaryIndexes=[
            _old_index("by_status", "status", ["workflow", "parent_run_id", "schedule_id", "ended_at"]),
            _old_index("by_workflow", "workflow", ["status", "parent_run_id", "schedule_id", "ended_at"]),
            {"IndexName": "by_lease", "Projection": {"ProjectionType": "KEYS_ONLY"},
             "KeySchema": [{"AttributeName": "lease_shard", "KeyType": "HASH"},
                           {"AttributeName": "lease_expires_at", "KeyType": "RANGE"}]}])


def test_init_aws_rekeys_the_listing_indexes_of_an_old_runs_table(settings: Settings, capsys: Any) -> None:
    own = settings.with_(table_prefix=f"u{uuid.uuid4().hex[:6]}-")
    client = boto3.client("dynamodb", region_name=own.region, endpoint_url=own.dynamodb_endpoint)
    runs = own.table_prefix + "runs"
    _make_old_runs_table(client, runs)
    created = time.time()
    for n, (status, workflow) in enumerate([("pending", "old"), ("completed", "old"), ("failed", "other")]):
        client.put_item(TableName=runs, Item={  # written by the earlier version: no listing keys
            "run_id": {"S": f"old-{n}"}, "workflow": {"S": workflow}, "status": {"S": status},
            "created_at": {"N": str(created + n)}, "updated_at": {"N": str(created + n)}, "args": {"S": "[[],{}]"}})
    create_tables(own)  # the other tables; the runs table exists and is left alone
    client.put_item(TableName=own.table_prefix + "tags", Item={  # an earlier version's tag item: unsharded
        "tag": {"S": "env=prod"}, "run_key": {"S": index_sort_key(created, "old-0")}, "run_id": {"S": "old-0"},
        "workflow": {"S": "old"}, "created_at": {"N": str(created)}})
    [spec] = [s for s in table_specs(own) if s.name == "runs"]
    plan = index_plan(client.describe_table(TableName=runs)["Table"], spec)
    assert sorted((action, index.name) for action, index in plan) == [
        ("create", "by_retention"), ("replace", "by_status"), ("replace", "by_workflow")]

    report = upgrade_indexes(own, sleep=lambda s: None)
    assert sorted(report) == [(f"{runs} (index by_retention)", "created"), (f"{runs} (index by_status)", "updated"),
                              (f"{runs} (index by_workflow)", "updated"),
                              (f"{runs} (listing keys of 3 runs)", "updated"),
                              (f"{own.table_prefix}tags (1 items moved to their shard)", "updated")]
    assert index_plan(client.describe_table(TableName=runs)["Table"], spec) == []
    assert ensure_indexes(own) == []  # a second run changes nothing

    store = DynamoStore(own)
    window = {"created": TimeRange(created - 1, created + 10)}
    assert [r.run_id for r in store.list_runs(workflow="old")] == ["old-1", "old-0"]
    assert [r.run_id for r in store.list_run_summaries(status="failed", **window)] == ["old-2"]
    assert store.count_runs("completed", since=created - 1, until=created + 10) == (1, False)
    assert [r.run_id for r in store.list_runs(tag=("env", "prod"))] == ["old-0"]
    assert ListingKeys(own).reindex_tags() == 0  # moved once
    assert store.finish_run("old-0", RunEnding("cancelled")) is not None  # a status write keys the run as it goes
    assert [r.run_id for r in store.list_runs(status="cancelled", **window)] == ["old-0"]
    client.put_item(TableName=runs, Item={  # one more, as an earlier version's worker still running would write it
        "run_id": {"S": "late"}, "workflow": {"S": "old"}, "status": {"S": "running"},
        "created_at": {"N": str(created + 5)}, "updated_at": {"N": str(created + 5)}, "args": {"S": "[[],{}]"}})
    configure(own)
    try:
        assert main(["runs", "reindex"]) == 0
    finally:
        configure(Settings.from_env())
    assert "listing keys set on 1 run(s); 0 tag item(s) moved" in capsys.readouterr().out
    assert [r.run_id for r in store.list_runs(status="running", **window)] == ["late"]
