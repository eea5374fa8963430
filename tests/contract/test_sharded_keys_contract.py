"""Write-sharded index keys: listings newest first across shards, a status key set by every
status write, and join items spread over one partition per counter shard."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from workflows.core.model.records import LIVE, TERMINAL, RunEnding, Suspension, TimeRange
from workflows.core.storage.listing import listing_key
from workflows.core.storage.tags import TAG_SHARDS
from workflows.settings import Settings

from .conftest import LEASE_SECONDS
from .support import run_record, start, timer, uid

SHARDS = 4
STATUSES = sorted(LIVE | TERMINAL)


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest, clock):  # type: ignore[no-untyped-def]
    """Each Store with WORKFLOWS_INDEX_SHARDS=4 (the tables do not depend on it)."""
    if request.param == "memory":
        from workflows.memory import MemoryStore

        return MemoryStore(Settings(lease_seconds=LEASE_SECONDS, index_shards=SHARDS), clock=clock)
    from persistence import DynamoStore

    return DynamoStore(request.getfixturevalue("contract_settings").with_(index_shards=SHARDS), clock=clock)


def window() -> float:
    """A creation time range of the test's own (runs of other tests are outside it)."""
    return 2e8 + uuid.uuid4().int % 10**6 * 100


def pages(store: Any, limit: int, **query: Any) -> list[list[str]]:
    """Every page of a listing (by summaries and by records, which must agree)."""
    found, cursor = [], None
    while True:
        page = store.list_run_summaries(limit=limit, cursor=cursor, **query)
        records = store.list_runs(limit=limit, cursor=cursor, **query)
        assert [s.run_id for s in page] == [r.run_id for r in records]
        assert page.next_cursor is None or len(page) == limit  # only a full page has a next one
        found.append([s.run_id for s in page])
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def test_paging_across_shards_returns_every_run_once_newest_first(store) -> None:  # type: ignore[no-untyped-def]
    base, rng = window(), random.Random(7)
    workflows = [uid("wf"), uid("wf")]
    runs: list[tuple[str, str, str, float]] = []  # run id, workflow, status, created at
    for i in rng.sample(range(60), 30):  # distinct times, created out of order
        workflow, at = workflows[i % 2], base + i
        run_id = start(store, workflow=workflow, created_at=at)
        status = rng.choice(["pending", "completed", "failed"])
        if status != "pending":
            store.finish_run(run_id, RunEnding(status))
        runs.append((run_id, workflow, status, at))
    assert len({listing_key("x", r[0], SHARDS) for r in runs}) == SHARDS  # the runs span every shard

    def expect(since: float, until: float, status: str | None = None, workflow: str | None = None) -> list[str]:
        chosen = [r for r in runs if since <= r[3] <= until and status in (None, r[2]) and workflow in (None, r[1])]
        return [r[0] for r in sorted(chosen, key=lambda r: -r[3])]

    whole, part = (base, base + 60), (base + 10, base + 45)
    for since, until in (whole, part):
        bounds = {"created": TimeRange(since, until)}
        for status in ("pending", "completed", "failed"):
            listed = pages(store, 7, status=status, **bounds)
            assert [r for page in listed for r in page] == expect(since, until, status=status)
            for workflow in workflows:
                listed = pages(store, 7, status=status, workflow=workflow, **bounds)
                assert [r for page in listed for r in page] == expect(since, until, status, workflow)
        for workflow in workflows:
            listed = pages(store, 7, workflow=workflow, **bounds)
            assert [r for page in listed for r in page] == expect(since, until, workflow=workflow)
    total = sum(1 for r in runs if r[2] == "completed")
    assert store.count_runs("completed", since=base, until=base + 60) == (total, False)
    assert store.count_runs("completed", since=base, until=base + 60, cap=total - 1) == (total - 1, True)


def test_a_cursor_of_another_listing_is_refused(store) -> None:  # type: ignore[no-untyped-def]
    from workflows.errors import SerializationError

    workflow, base = uid("wf"), window()
    for i in range(3):
        start(store, workflow=workflow, created_at=base + i)
    by_workflow = store.list_runs(workflow=workflow, limit=1).next_cursor
    by_status = store.list_runs(status="pending", created=TimeRange(base, base + 5), limit=1).next_cursor
    assert by_workflow is not None and by_status is not None
    with pytest.raises(SerializationError):
        store.list_runs(status="pending", cursor=by_workflow)
    with pytest.raises(SerializationError):
        store.list_run_summaries(workflow=workflow, cursor=by_status)


def test_every_status_write_moves_the_run_in_the_status_listing(store, clock) -> None:  # type: ignore[no-untyped-def]
    base = window()
    bounds = {"created": TimeRange(base, base + 100)}

    def listed_under(run_id: str) -> list[str]:
        return [status for status in STATUSES
                if run_id in [s.run_id for s in store.list_run_summaries(status=status, **bounds)]]

    def check(run_id: str, status: str) -> None:
        assert store.get_run(run_id).status == status
        assert listed_under(run_id) == [status], (run_id, status)

    run_id = start(store, workflow="life", created_at=base)
    check(run_id, "pending")
    assert store.advance_run(run_id, 0, {"kind": "step"})  # a dispatched step
    check(run_id, "running")
    assert store.suspend_run(run_id, Suspension(1, {"kind": "sleep"}), store.get_run(run_id).wake_seq)
    check(run_id, "suspended")
    assert store.wake_run(run_id) is not None  # a wake leases the run; its status stays
    check(run_id, "suspended")
    assert store.claim_run(run_id, 1, "resume-1", {"kind": "step"})  # inline steps
    check(run_id, "running")
    clock.advance(LEASE_SECONDS * 3)
    assert store.claim_recovery(store.get_run(run_id)) is not None
    check(run_id, "running")
    assert store.defer_run(run_id, store.get_run(run_id).wake_seq, timer(run_id, 2, clock.now() + 30, kind="wake"))
    check(run_id, "suspended")
    assert store.advance_run(run_id, 2, {"kind": "step"})
    check(run_id, "running")
    assert store.finish_run(run_id, RunEnding("completed", result="1")) is not None
    check(run_id, "completed")

    first = start(store, workflow="life", created_at=base + 1)
    successor = run_record(store, workflow="life", created_at=base + 2, continued_from=first)
    assert store.continue_run(first, successor) is not None
    check(first, "continued")
    check(successor.run_id, "pending")
    for n, status in enumerate(("failed", "cancelled", "timed_out")):
        ended = start(store, workflow="life", created_at=base + 3 + n)
        assert store.finish_run(ended, RunEnding(status, error="stop")) is not None
        check(ended, status)
    assert [s for s in STATUSES if store.count_runs(s, since=base, until=base + 100)[0]] == [
        "cancelled", "completed", "continued", "failed", "pending", "timed_out"]


def join_partitions(store: Any, join_id: str) -> dict[str, int]:
    """Every partition key holding items of a join, with its item count (read independently of the store)."""
    from workflows.memory import MemoryStore

    keys: list[str] = []
    if isinstance(store, MemoryStore):
        keys = [j for (j, _) in store.joins.items if j == join_id or j.startswith(join_id + "#")]
    else:
        import boto3

        settings = store.settings
        client = boto3.client("dynamodb", region_name=settings.region, endpoint_url=settings.dynamodb_endpoint)
        for page in client.get_paginator("scan").paginate(
                TableName=store.m.Join.Meta.table_name, FilterExpression="begins_with(join_id, :j)",
                ExpressionAttributeValues={":j": {"S": join_id}}):
            keys += [item["join_id"]["S"] for item in page["Items"]]
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_a_250_branch_join_writes_three_partitions_and_the_root(store) -> None:  # type: ignore[no-untyped-def]
    join, total = f"{uid()}#2", 250
    for index in range(total):
        assert store.record_branch(join, index, str(index), None)
    fired = [index for index in range(total) if store.join_branch(join, index, total)]
    assert fired == [total - 1]
    # Each shard partition: its branches' results and its counter; the root: the counter of full shards.
    assert join_partitions(store, join) == {join: 1, f"{join}#0": 101, f"{join}#1": 101, f"{join}#2": 51}
    assert [r.index for r in store.branch_results(join)] == list(range(total))
    assert [r.index for r in store.branch_results(join, total)] == list(range(total))
    assert store.get_branch(join, 199) is not None and store.get_branch(join, 199).data == "199"
    results, complete = store.settle_join(join, total)
    assert complete and [r.index for r in results] == list(range(total))
    counters = store.join_items(join)
    assert [(c.entry, len(c.done)) for c in counters] == [(-1, 3), (-2, 100), (-3, 100), (-4, 50)]


def test_branch_results_of_a_join_in_flight_need_its_width(store) -> None:  # type: ignore[no-untyped-def]
    join, total = f"{uid()}#0", 150
    store.record_branch(join, 3, "3", None)
    store.record_branch(join, 120, "120", None)
    assert [r.index for r in store.branch_results(join, total)] == [3, 120]
    assert [r.index for r in store.branch_results(join)] == [3]  # shard 0 is not full: shard 1 is not read
    results, complete = store.settle_join(join, total)  # counts both recorded branches
    assert [r.index for r in results] == [3, 120] and not complete
    assert sorted(n for c in store.join_items(join, total) for n in c.done) == [3, 120]


def test_a_tag_many_runs_carry_is_spread_over_shards_and_listed_newest_first(store) -> None:  # type: ignore[no-untyped-def]
    """A tag's index items are write-sharded (``key=value#<k>``, 64 shards): 24 runs carrying one
    tag land in many shards, and ``list_runs(tag=...)`` pages them newest first, each once."""
    base, rng = window(), random.Random(11)
    value, workflow = uid("v"), uid("wf")
    runs = []
    for i in rng.sample(range(50), 24):
        runs.append((start(store, workflow=workflow, created_at=base + i, tags={"env": value}), base + i))
    assert tag_partitions(store, f"env={value}") == {listing_key(f"env={value}", r[0], TAG_SHARDS) for r in runs}
    assert len(tag_partitions(store, f"env={value}")) > 8  # 24 runs over 64 shards
    newest_first = [r[0] for r in sorted(runs, key=lambda r: -r[1])]
    found, cursor = [], None
    while True:
        page = store.list_runs(tag=("env", value), limit=5, cursor=cursor)
        found.append([r.run_id for r in page])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert [r for p in found for r in p] == newest_first and all(len(p) == 5 for p in found[:-1])
    window_ids = [r[0] for r in sorted(runs, key=lambda r: -r[1]) if base + 10 <= r[1] <= base + 30]
    listed = store.list_runs(tag=("env", value), limit=50, created=TimeRange(base + 10, base + 30))
    assert [r.run_id for r in listed] == window_ids


def tag_partitions(store: Any, tag: str) -> set[str]:
    """The partition keys of the stored index items of ``tag``, in any shard."""
    if hasattr(store, "run_tags"):  # the memory store's table
        return {i["tag"] for i in store.run_tags.items.values() if i["tag"].split("#")[0] == tag}
    return {item.tag for k in range(TAG_SHARDS) for item in store.m.Tag.query(f"{tag}#{k}")}
