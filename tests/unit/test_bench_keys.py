"""Writes per partition key (bench/keys.py) and their extrapolation to scale (bench/capacity.py)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.capacity import RUNS_PER_S, STEPS_PER_S, entity_rates, shards_needed, shared_rates
from bench.keys import KeyCounter, hot_keys_of, index_writes, schema_from_description, shape

RUN_ID = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"
DESCRIPTION = {
    "KeySchema": [{"AttributeName": "run_id", "KeyType": "HASH"}],
    "GlobalSecondaryIndexes": [
        {"IndexName": "by_status", "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"},
                                                 {"AttributeName": "created_at", "KeyType": "RANGE"}],
         "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["workflow"]}},
        {"IndexName": "by_lease", "KeySchema": [{"AttributeName": "lease_shard", "KeyType": "HASH"},
                                                {"AttributeName": "lease_expires_at", "KeyType": "RANGE"}],
         "Projection": {"ProjectionType": "KEYS_ONLY"}},
    ],
}
RUNS = schema_from_description(DESCRIPTION)
BY_STATUS, BY_LEASE = RUNS.indexes


def run(status: str = "running", **extra: Any) -> dict[str, Any]:
    item = {"run_id": {"S": RUN_ID}, "status": {"S": status}, "created_at": {"N": "100"},
            "workflow": {"S": "order"}, "cursor": {"N": "1"}}
    item.update({k: ({"N": str(v)} if isinstance(v, int) else {"S": v}) for k, v in extra.items()})
    return item


def test_the_schema_comes_from_describe_table() -> None:
    assert (RUNS.hash_key, RUNS.range_key) == ("run_id", None)
    assert (BY_STATUS.hash_key, BY_STATUS.range_key, BY_STATUS.projection) == ("status", "created_at", "INCLUDE")
    assert BY_STATUS.included == {"workflow"} and BY_LEASE.projection == "KEYS_ONLY"


def test_an_item_entering_an_index_is_one_write_on_its_new_key() -> None:
    assert index_writes(RUNS, BY_STATUS, None, run()) == [("running", 1)]
    assert index_writes(RUNS, BY_LEASE, run(), run(lease_shard="3", lease_expires_at=60)) == [("3", 1)]


def test_an_item_leaving_an_index_is_one_write_on_its_old_key() -> None:
    assert index_writes(RUNS, BY_LEASE, run(lease_shard="3", lease_expires_at=60), run()) == [("3", 1)]
    assert index_writes(RUNS, BY_STATUS, run("completed"), None) == [("completed", 1)]


def test_a_key_change_is_a_delete_on_the_old_key_and_a_put_on_the_new_one() -> None:
    assert index_writes(RUNS, BY_STATUS, run("running"), run("completed")) == [("running", 1), ("completed", 1)]
    # a change of the range key moves the entry too, within one partition key
    assert index_writes(RUNS, BY_LEASE, run(lease_shard="3", lease_expires_at=60),
                        run(lease_shard="3", lease_expires_at=120)) == [("3", 1), ("3", 1)]


def test_a_change_of_a_non_projected_attribute_writes_nothing_to_the_index() -> None:
    assert index_writes(RUNS, BY_STATUS, run(cursor=1), run(cursor=2)) == []
    assert index_writes(RUNS, BY_LEASE, run(lease_shard="3", lease_expires_at=60),
                        run(lease_shard="3", lease_expires_at=60, cursor=9)) == []
    assert index_writes(RUNS, BY_LEASE, run(), run(cursor=5)) == []  # never in the index


def test_a_change_of_a_projected_attribute_is_one_write() -> None:
    changed = run()
    changed["workflow"] = {"S": "other"}
    assert index_writes(RUNS, BY_STATUS, run(), changed) == [("running", 1)]


def test_keys_holding_ids_are_per_entity_and_abbreviated() -> None:
    assert shape("running") == ("running", False)
    assert shape(f"{RUN_ID}#2") == ("3f2a1b4c…#2", True)
    assert shape("a" * 64) == ("aaaaaaaa…", True)


def test_the_counter_counts_the_base_key_and_every_index_per_window() -> None:
    counter = KeyCounter()
    counter.record("wfb", "wfb-runs", RUNS, None, run(), None, units=2)  # created in a transaction
    counter.record("wfb", "wfb-runs", RUNS, run(), run("completed"), None, units=1)
    counter.record("wfb", "wfb-runs", RUNS, run("completed"), run("completed", cursor=3), None, units=1)
    (row,) = counter.rows()
    assert (row["system"], row["requests"]) == ("wfb", 0)
    hot = hot_keys_of([row])
    assert hot is not None
    runs, by_status = hot["tables"]["runs"], hot["tables"]["runs.by_status"]
    assert (runs["writes"], runs["units"], runs["hottest_entity"]["key"]) == (3, 4, "3f2a1b4c…")
    assert runs["hottest_shared"] is None
    assert {e["key"]: e["writes"] for e in by_status["top"]} == {"running": 2, "completed": 1}
    assert by_status["hottest_shared"]["key"] == "running" and by_status["shared_units"] == 3
    assert hot["top"][0]["table"] == "runs"
    counter.reset()
    assert counter.rows() == []


def window(scenario: str, runs: int, steps_per_run: int, tables: dict[str, Any]) -> dict[str, Any]:
    """A result of the results JSON with a hot_keys row."""
    return {"scenario": scenario, "system": "workflows", "steps_per_run": steps_per_run, "steps": runs * steps_per_run,
            "timing": {"latencies": [1.0] * runs}, "error": None,
            "counts": [{"operation": "hot_keys", "hot_keys": {"window_s": 10.0, "tables": tables}}]}


def key(name: str, units: int, entity: bool = False) -> dict[str, Any]:
    return {"key": name, "units": units, "writes": units, "per_entity": entity}


def test_shared_keys_extrapolate_a_cost_per_run_plus_a_cost_per_step() -> None:
    results = [
        window("throughput", 50, 1, {"runs.by_status": {"hottest_shared": key("running", 100)},
                                     "runs.by_lease": {"hottest_shared": key("3", 14), "shared_units": 80}}),
        window("sequential", 10, 10, {"runs.by_status": {"hottest_shared": key("running", 29)}}),
    ]
    rates = shared_rates(results, current={"runs.by_lease": 8})
    status = rates["runs.by_status"]
    # one-step runs: 2 units a run; ten-step runs: 2.9 -> 0.1 per extra step, 1.9 per run whatever its steps
    assert status["units_per_step"] == pytest.approx(0.1) and status["units_per_run"] == pytest.approx(1.9)
    assert status["rate"] == pytest.approx(1.9 * RUNS_PER_S + 0.1 * STEPS_PER_S) == 29_000
    assert status["share"] == pytest.approx(29.0) and status["shards_needed"] == 59
    assert status["scenario"] == "throughput + sequential"
    lease = rates["runs.by_lease"]  # sharded 8 ways today: the mean shard (80 / 8 units, 50 runs); 8x unsharded
    assert lease["key"] == "3 (mean of 8 shards)" and lease["units_per_run"] == pytest.approx(0.2)
    assert lease["rate"] == pytest.approx(2_000) and lease["unsharded"] == pytest.approx(16_000)
    assert lease["shards_needed"] == shards_needed(16_000) == 33


def test_shards_needed_keeps_each_shard_under_half_the_limit() -> None:
    assert shards_needed(0) == 1 and shards_needed(499) == 1 and shards_needed(500) == 2  # 50% is not under 50%
    assert shards_needed(3_999) == 8 and shards_needed(4_000) == 9 and shards_needed(4_001) == 9


def test_entity_keys_use_the_slope_between_the_narrowest_and_widest_window() -> None:
    results = [
        window("fan-out-50", 1, 50, {"joins": {"hottest_entity": key("3f2a1b4c…#1", 110, True)}}),
        window("fan-out-150", 1, 150, {"joins": {"hottest_entity": key("9a8b7c6d…#1", 310, True)}}),
        window("history-10", 1, 10, {"history": {"hottest_entity": key("3f2a1b4c…", 14, True)}}),
        window("history-150", 1, 150, {"history": {"hottest_entity": key("9a8b7c6d…", 154, True)}}),
        window("throughput", 50, 1, {"history": {"hottest_entity": key("11112222…", 4, True)}}),
    ]
    rates = entity_rates(results)
    joins, history = rates["joins"], rates["history"]
    assert joins["units_per_step"] == pytest.approx(2.0) and joins["series"] == "fan-out 50 -> 150"
    assert joins["at_steps"] == pytest.approx(200_000) and joins["steps_per_s_to_half"] == pytest.approx(250)
    assert history["units_per_step"] == pytest.approx(1.0) and history["steps_per_s_to_half"] == pytest.approx(500)


def test_a_key_that_carries_its_shard_is_one_shard_and_repeats_are_averaged() -> None:
    results = [
        window("throughput", 100, 1, {"runs.by_status": {"hottest_shared": key("pending#3", 30)}}),
        window("throughput", 100, 1, {"runs.by_status": {"hottest_shared": key("pending#5", 20)}}),
        window("history-100", 1, 100, {"runs.by_status": {"hottest_shared": key("pending#1", 2)}}),  # too few runs
    ]
    status = shared_rates(results, current={"runs.by_status": 8})["runs.by_status"]
    # the mean of the repeats' hottest shard (0.3 and 0.2 units a run) is one shard's; 8 of them unsharded
    assert status["key"] == "pending#3 (hottest of 8 shards)" and status["units_per_run"] == pytest.approx(0.25)
    assert status["rate"] == pytest.approx(2_500) and status["unsharded"] == pytest.approx(20_000)
    assert status["units_per_step"] == 0 and status["scenario"] == "throughput + —"


def test_key_spread_gives_the_hottest_and_the_mean_key_per_run_at_scale() -> None:
    from bench.key_spread import spread

    rows = [{"operation": "hot_keys", "hot_keys": {"window_s": 10.0, "tables": {
        "tags": {"hottest_shared": key("env=prod#7", 30), "shared_units": 1280},
        "timers.by_due": {"hottest_shared": key("3", 400), "shared_units": 1280}}}}]
    tags, timers = spread(rows, 640, {"tags": 64, "timers.by_due": 8})
    # 1280 units over 64 shards and 640 runs: 0.03125 a run on the mean key; the hottest took 30
    assert tags["mean_per_run"] == pytest.approx(0.03125) and tags["hottest_per_run"] == pytest.approx(30 / 640)
    assert tags["mean_at_scale"] == pytest.approx(312.5) and tags["key"] == "env=prod#7"
    assert timers["mean_per_run"] == pytest.approx(0.25) and timers["hottest_at_scale"] == pytest.approx(6250)
