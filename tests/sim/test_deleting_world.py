"""The simulator's deleting world: its checks find a live run that lost something to TTL or to
the payload bucket's lifecycle rule, and its lagging indexes leave the engine correct.

The breaks are injected (a store that stamps live runs with a TTL, a bucket that expires
objects after an hour), so these tests hold whatever the engine does about retention.
"""

from __future__ import annotations

from typing import Any

import pytest

from workflows.memory import MemoryStore
from workflows.memory.blobs import MemoryBlobs
from workflows.memory.tables import IndexLag, Table
from workflows.sim import FaultPlan, run_seed, workloads

DAY = 86_400.0
#: Runs that sleep two days: long enough for an hour's TTL or lifecycle rule to matter.
SLEEPERS = [workloads.Workload("sim_sleep", lambda r, k: [2 * DAY], lambda a: [("completed", 2)])]


class LiveRunsWithTTL(MemoryStore):
    """A store that stamps every new run with a TTL an hour ahead (while it is live)."""

    def run_item(self, run: Any) -> dict[str, Any]:
        return {**super().run_item(run), "retain_until": int(self.now() + 3600)}


class ForgetfulBucket(MemoryBlobs):
    """A bucket whose lifecycle rule expires every object (of live runs too) an hour after it was written."""

    def expire(self, now: float, days: int) -> list[str]:
        self.ended |= set(self.objects)
        return super().expire(now + days * DAY - 3600, days)


class StoreWithForgetfulBucket(MemoryStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.blob_objects = ForgetfulBucket(self.clock)


def violations(store_class: type[MemoryStore], monkeypatch: pytest.MonkeyPatch, seeds: int = 3) -> list[str]:
    monkeypatch.setattr(workloads, "CATALOGUE", SLEEPERS)
    return [v for seed in range(seeds) for v in run_seed(seed, FaultPlan.none(), store_class=store_class).violations]


def test_sleeping_runs_keep_everything_in_a_deleting_world(monkeypatch: pytest.MonkeyPatch) -> None:
    assert violations(MemoryStore, monkeypatch) == []


def test_a_live_run_stamped_with_a_ttl_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    found = violations(LiveRunsWithTTL, monkeypatch)
    assert found and all("is past its TTL" in v or "TTL deletes" in v for v in found), found


def test_an_object_a_live_run_references_expiring_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    found = violations(StoreWithForgetfulBucket, monkeypatch)
    assert found and all("references payload object" in v for v in found), found


def test_a_lagging_index_shows_writes_late_and_in_order() -> None:
    now = [100.0]
    table = Table("t", "id", indexes={"by_x": _index()})
    table.lag = IndexLag(lambda: now[0], lambda: 2.0)
    table.put({"id": "a", "x": "k", "n": 1})
    assert table.query("k", index="by_x")[0] == []  # not yet in the index
    assert table.get("a") is not None  # the table itself is up to date
    now[0] += 1.0
    table.update(("a",), lambda item: item.__setitem__("n", 2))
    now[0] += 1.5
    assert [i["n"] for i in table.query("k", index="by_x")[0]] == [1]  # the first write arrived, not the second
    now[0] += 1.0
    assert [i["n"] for i in table.query("k", index="by_x")[0]] == [2]
    table.expire(("a",))
    assert [i["n"] for i in table.query("k", index="by_x")[0]] == [2]  # the delete has not reached it
    now[0] += 2.0
    assert table.query("k", index="by_x")[0] == [] and not table.lag.states


def _index() -> Any:
    from workflows.memory.tables import Index

    return Index("x", "id")
