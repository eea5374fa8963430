"""WORKFLOWS_INDEX_SHARDS, and the merge of sharded listings (pure logic, no store)."""

from __future__ import annotations

import random

import pytest

from workflows.core.model.join_layout import fan_out_width, fan_out_width_at, partitions
from workflows.core.storage.listing import ListingCursor, Position, merged_page
from workflows.errors import ConfigurationError, SerializationError
from workflows.settings import Settings


def test_index_shards_setting() -> None:
    assert Settings.from_env({}).index_shards == 8
    assert Settings.from_env({"WORKFLOWS_INDEX_SHARDS": " 64 "}).index_shards == 64
    for bad in ("0", "-3", "1025", "eight", "2.5"):
        with pytest.raises(ConfigurationError, match="WORKFLOWS_INDEX_SHARDS"):
            Settings.from_env({"WORKFLOWS_INDEX_SHARDS": bad})
    with pytest.raises(ConfigurationError, match="WORKFLOWS_INDEX_SHARDS"):
        Settings(index_shards=True)  # type: ignore[arg-type]


Item = tuple[float, str]


def shard_query(shards: list[list[Item]], short: random.Random | None = None):  # type: ignore[no-untyped-def]
    """Queries of in-memory shards: newest first, after a position, up to a limit (``short``:
    sometimes fewer, at least one, with more to come, as a read cut short would be)."""
    def query(shard: int, after: Position | None, limit: int) -> tuple[list[Item], bool]:
        rows = sorted(shards[shard], key=lambda r: (-r[0], r[1]))
        if after is not None:
            rows = [r for r in rows if (-r[0], r[1]) > (-after[0], after[1])]
        taken = limit if short is None else short.randint(1, limit)
        return rows[:taken], len(rows) > taken
    return query


@pytest.mark.parametrize("short", [False, True], ids=["full-reads", "short-reads"])
@pytest.mark.parametrize("seed", range(20))
def test_merged_pages_are_newest_first_and_complete(seed: int, short: bool) -> None:
    rng = random.Random(seed)
    count, limit = rng.randint(4, 6), rng.randint(1, 9)
    items = [(float(rng.randint(0, 40)), f"r{i}") for i in range(rng.randint(0, 60))]  # ties in time too
    shards: list[list[Item]] = [[] for _ in range(count)]
    for item in items:
        shards[rng.randrange(count)].append(item)
    seen, cursor = [], None
    while True:
        query = shard_query(shards, random.Random(seed) if short else None)
        page, cursor = merged_page("status", count, limit, cursor, query, lambda r: r)
        assert len(page) <= limit and (cursor is None or short or len(page) == limit)
        seen += page
        if cursor is None:
            break
    assert sorted(seen) == sorted(items)  # every item once
    assert [at for at, _ in seen] == sorted((at for at, _ in items), reverse=True)


def test_listing_cursors_are_checked() -> None:
    good = ListingCursor("status", {1: (5.0, "r1")}, {0}).encode()
    assert ListingCursor.decode(good, "status", 4).positions == {1: (5.0, "r1")}
    for bad, kind, shards in ((good, "workflow", 4), (good, "status", 1), ("nonsense", "status", 4),
                              (ListingCursor("status", {0: (5.0, "r1")}, {0}).encode(), "status", 4)):
        with pytest.raises(SerializationError, match="invalid cursor"):
            ListingCursor.decode(bad, kind, shards)


def test_fan_out_widths_and_partitions() -> None:
    assert fan_out_width("250 branches") == 250 and fan_out_width("step") is None and fan_out_width(None) is None
    assert fan_out_width_at(3, {3: "12 branches"}, None) == 12
    assert fan_out_width_at(4, {}, {"kind": "parallel", "name": "7 branches"}) == 7
    assert fan_out_width_at(4, {}, {"kind": "sleep"}) is None
    assert partitions("r#1", 201) == ["r#1", "r#1#0", "r#1#1", "r#1#2"]
