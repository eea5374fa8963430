"""Bring the indexes of existing tables in line with the models, for ``workflows init-aws``.

``create_tables`` leaves a table that exists alone. A table made by an earlier version may
lack an index of the models, or hold one of the same name on other keys (``by_status`` and
``by_workflow`` were keyed on ``status`` and ``workflow`` before they were write-sharded).
UpdateTable creates or deletes one global secondary index per call: a changed index is
deleted, then created again on its new keys, each step waited for.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from persistence.provision import dynamodb_client
from workflows.core.storage.aws_actions import aws_actions
from workflows.errors import DeploymentError
from workflows.settings import Settings

from .resources import IndexSpec, TableSpec, table_specs

#: How long init-aws waits for an index to be created (DynamoDB backfills it from the table's items).
INDEX_WAIT_SECONDS = 3600.0
POLL_SECONDS = 2.0


def index_definition(index: IndexSpec) -> dict[str, Any]:
    """The key schema and projection of an index, as DynamoDB describes them."""
    keys = [{"AttributeName": index.hash_key, "KeyType": "HASH"}]
    if index.range_key is not None:
        keys.append({"AttributeName": index.range_key, "KeyType": "RANGE"})
    projection: dict[str, Any] = {"ProjectionType": index.projection}
    if index.non_key_attributes:
        projection["NonKeyAttributes"] = sorted(index.non_key_attributes)
    return {"IndexName": index.name, "KeySchema": keys, "Projection": projection}


def _same(described: dict[str, Any], index: IndexSpec) -> bool:
    wanted = index_definition(index)
    projection = dict(described.get("Projection", {}))
    if "NonKeyAttributes" in projection:
        projection["NonKeyAttributes"] = sorted(projection["NonKeyAttributes"])
    return described.get("KeySchema") == wanted["KeySchema"] and projection == wanted["Projection"]


def index_plan(described: dict[str, Any], spec: TableSpec) -> list[tuple[str, IndexSpec]]:
    """What a table described as ``described`` needs: ``("replace", index)`` for an index of
    the same name on other keys or projection, ``("create", index)`` for a missing one."""
    existing = {i["IndexName"]: i for i in described.get("GlobalSecondaryIndexes", [])}
    plan = []
    for index in spec.indexes:
        current = existing.get(index.name)
        if current is None:
            plan.append(("create", index))
        elif not _same(current, index):
            plan.append(("replace", index))
    return plan


@aws_actions("dynamodb:DescribeTable@tables", "dynamodb:UpdateTable@tables")
def ensure_indexes(settings: Settings, *, sleep: Callable[[float], None] = time.sleep,
                   wait_seconds: float = INDEX_WAIT_SECONDS) -> list[tuple[str, str]]:
    """Create every missing index and replace every changed one; return ``(name, action)`` pairs.

    Raises:
        DeploymentError: an index did not become active (or go away) within ``wait_seconds``.
    """
    client = dynamodb_client(settings)
    report = []
    for spec in table_specs(settings):
        table = settings.table_prefix + spec.name
        described = client.describe_table(TableName=table)["Table"]
        for action, index in index_plan(described, spec):
            if action == "replace":
                client.update_table(TableName=table, GlobalSecondaryIndexUpdates=[
                    {"Delete": {"IndexName": index.name}}])
                _wait(client, table, index.name, None, sleep, wait_seconds)
            create = index_definition(index)
            if described.get("BillingModeSummary", {}).get("BillingMode") == "PROVISIONED":
                throughput = described["ProvisionedThroughput"]
                create["ProvisionedThroughput"] = {k: throughput[k] for k in ("ReadCapacityUnits",
                                                                               "WriteCapacityUnits")}
            keys = {index.hash_key, *([index.range_key] if index.range_key else [])}
            client.update_table(
                TableName=table, GlobalSecondaryIndexUpdates=[{"Create": create}],
                AttributeDefinitions=[{"AttributeName": n, "AttributeType": t}
                                      for n, t in spec.attribute_types if n in keys])
            _wait(client, table, index.name, "ACTIVE", sleep, wait_seconds)
            report.append((f"{table} (index {index.name})", "created" if action == "create" else "updated"))
    return report


@aws_actions("dynamodb:DescribeTable@tables")
def _wait(client: Any, table: str, index: str, status: str | None, sleep: Callable[[float], None],
          wait_seconds: float) -> None:
    """Wait until ``index`` of ``table`` has ``status`` (None: until it is gone)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        found = {i["IndexName"]: i.get("IndexStatus", "ACTIVE") for i in
                 client.describe_table(TableName=table)["Table"].get("GlobalSecondaryIndexes", [])}
        if found.get(index) == status:
            return
        if time.monotonic() > deadline:
            raise DeploymentError(
                f"index {index} of table {table} is {found.get(index, 'absent')} after {wait_seconds:.0f} s "
                f"(waiting for {status or 'its deletion'}); run 'workflows init-aws' again once it is done")
        sleep(POLL_SECONDS)


#: The indexes keyed on the listing keys that ``reindex_runs`` sets on runs written without them.
LISTING_INDEXES = ("by_status", "by_workflow")


def upgrade_indexes(settings: Settings, **wait: Any) -> list[tuple[str, str]]:
    """:func:`ensure_indexes`, then, if it made a listing index, the listing keys of every run
    stored without them and the shards of tag items stored unsharded (see ``persistence.reindex``);
    ``(name, action)`` pairs."""
    from persistence.reindex import ListingKeys

    report = ensure_indexes(settings, **wait)
    runs = settings.table_prefix + "runs"
    if any(name in (f"{runs} (index {index})" for index in LISTING_INDEXES) for name, _ in report):
        keys = ListingKeys(settings)
        report.append((f"{runs} (listing keys of {keys.reindex_runs()} runs)", "updated"))
        report.append((f"{settings.table_prefix}tags ({keys.reindex_tags()} items moved to their shard)", "updated"))
    return report
