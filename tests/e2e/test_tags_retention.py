"""Tags and retention on real worker processes: tags set inside a workflow are found by
``list_runs`` and the CLI, and every item of an ended run carries at least its TTL (beat
stamps what lacks one)."""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

import boto3
import pytest
from boto3.dynamodb.types import TypeDeserializer

from tests.e2e import flows
from tests.waiting import wait_for
from workflows import list_runs
from workflows.cli.commands import main
from workflows.core.model.join_layout import shard_partition
from workflows.core.storage.tags import index_key
from workflows.settings import Settings

pytestmark = pytest.mark.e2e


def test_tags_set_inside_a_workflow_are_found_by_list_runs_and_the_cli(cluster, capsys) -> None:  # type: ignore[no-untyped-def]
    customer = f"c-{uuid.uuid4().hex[:8]}"
    runs = [flows.tagged_order.options(tags={"customer": customer}).start(f"o-{i}") for i in range(3)]
    assert [run.result(timeout=60) for run in runs] == [5, 5, 5]
    newest_first = [run.run_id for run in reversed(runs)]
    assert [r.run_id for r in list_runs(tag=f"customer={customer}")] == newest_first
    first, second = list_runs(tag=f"customer={customer}", limit=2), None
    assert first.next_cursor is not None
    second = list_runs(tag=f"customer={customer}", limit=2, cursor=first.next_cursor)
    assert [r.run_id for r in [*first, *second]] == newest_first
    record = runs[1].record()
    assert record.tags == {"customer": customer, "order": "o-1", "stage": "done", "total": "5"}
    done = {r.run_id for r in list_runs(tag="stage=done", workflow=flows.tagged_order, limit=1000)}
    assert set(newest_first) <= done
    assert not {r.run_id for r in list_runs(tag="stage=started", limit=1000)} & set(newest_first)
    assert main(["runs", "list", "--tag", "order=o-1", "--limit", "1000"]) == 0
    out = capsys.readouterr().out
    assert runs[1].run_id in out and runs[0].run_id not in out and f"customer={customer}" in out


def _items(settings: Settings, table: str, key: str, value: str) -> list[dict[str, Any]]:
    client = boto3.client("dynamodb", region_name=settings.region, endpoint_url=settings.dynamodb_endpoint)
    plain = TypeDeserializer()
    found = client.query(TableName=settings.table_prefix + table, KeyConditionExpression="#k = :v",
                         ExpressionAttributeNames={"#k": key}, ExpressionAttributeValues={":v": {"S": value}},
                         ConsistentRead=True)["Items"]
    return [{k: plain.deserialize(v) for k, v in item.items()} for item in found]


def test_beat_stamps_every_item_of_an_ended_run_with_its_ttl(cluster, settings, store) -> None:  # type: ignore[no-untyped-def]
    key = f"k-{uuid.uuid4().hex[:8]}"
    run = flows.tagged_order.options(idempotency_key=key, tags={"batch": key}).start("o-ttl")
    assert run.result(timeout=60) == 5
    ended = store.get_run(run.run_id)
    expected = math.ceil(ended.ended_at + settings.retention)
    assert ended.retain_until == expected  # set by the end itself
    # beat stamps the rest a lease (6 s here) after the end
    wait_for(lambda: not (store.find_run(run.run_id)
                          and run.run_id in store.runs_to_retain(time.time(), limit=100_000)),
             60, poll=0.5, what="beat stamps the ended run's items")
    history = _items(settings, "history", "run_id", run.run_id)
    [pos] = [e["seq"] // 1000 for e in history if e["kind"] == "parallel"]
    joins = _items(settings, "joins", "join_id", shard_partition(f"{run.run_id}#{pos}", 0))  # results and counter
    guard = _items(settings, "idempotency", "key", key)
    tags = _items(settings, "tags", "tag", index_key("batch", key, run.run_id))  # its shard of the tag
    assert len(history) == 4 and len(joins) >= 3 and len(guard) == 1 and len(tags) == 1
    assert {int(i["retain_until"]) for i in [*guard, *tags]} == {expected}  # stamped by beat's sweep
    # written expiring (retention + horizon after the write): already later than the run's TTL, left so
    assert all(int(i["retain_until"]) >= expected for i in [*history, *joins])
