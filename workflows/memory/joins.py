"""Joins in memory: branch results and counters in the partitions the DynamoDB store uses
(``<join id>#<shard>`` for a counter shard and its branches, ``<join id>`` for the root)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..core.join_layout import (
    ROOT_SLOT,
    SHARD_SIZE,
    branch_shard,
    read_by_shard,
    shard_count,
    shard_partition,
    shard_size,
    shard_slot,
)
from ..core.records import BranchRecord
from ..core.storage import check_item_size
from .base import MemoryBase
from .tables import Item, Table, absent, actions, add, set_


@dataclass
class JoinCounter:
    """One counter item of a join: the members counted in a shard (slot -2 - n) or the root (-1)."""

    join_id: str
    slot: int
    total: int | None
    done: set[int]


def _branch(item: Item) -> BranchRecord:
    return BranchRecord(index=int(item["slot"]), data=item.get("data"), error=item.get("error"))


def _counter(item: Item) -> JoinCounter:
    return JoinCounter(item["join_id"], int(item["slot"]), item.get("total"), set(item.get("done") or ()))


class JoinTables(MemoryBase):
    """Fan-in joins, request by request as the DynamoDB store does."""

    joins: Table

    def record_branch(self, join_id: str, index: int, data: str | None, error: str | None) -> bool:
        """Record branch ``index``'s outcome once; False if it was recorded already."""
        check_item_size({"data": data, "error": error})
        item = {"join_id": shard_partition(join_id, branch_shard(index)), "slot": index, "data": data, "error": error}
        return self._write("record branch", lambda: self.joins.put(item, absent("slot")))

    def _count(self, partition: str, slot: int, member: int, size: int) -> bool | None:
        """Add ``member`` to the set at ``slot``: True if this filled it, False if not yet, None if a repeat."""
        after = self._update("join", self.joins, (partition, slot), actions(add("done", {member}), set_("total", size)),
                             lambda item: member not in item.get("done", ()))
        return None if after is None else len(after.get("done") or ()) == size

    def _is_full(self, partition: str, slot: int, size: int) -> bool:
        item = self._request("read join", lambda: self.joins.get(partition, slot))
        return item is not None and len(item.get("done") or ()) == size

    def join_branch(self, join_id: str, index: int, total: int) -> bool:
        """Count branch ``index`` of ``total`` (idempotently); True when the join is complete."""
        shard, shards = branch_shard(index), shard_count(total)
        size, partition = shard_size(shard, total), shard_partition(join_id, shard)
        filled = self._count(partition, shard_slot(shard), index, size)
        if filled is False or (filled is None and not self._is_full(partition, shard_slot(shard), size)):
            return False
        if shards == 1:
            return True
        root = self._count(join_id, ROOT_SLOT, shard, shards)
        return root is True or (root is None and self._is_full(join_id, ROOT_SLOT, shards))

    def get_branch(self, join_id: str, index: int) -> BranchRecord | None:
        """Branch ``index``'s recorded outcome, or None."""
        partition = shard_partition(join_id, branch_shard(index))
        item = self._request("read branch", lambda: self.joins.get(partition, index))
        return None if item is None else _branch(item)

    def _shard_items(self, join_id: str, shard: int, where: Callable[[int], bool] | None = None,
                     name: str = "read join") -> list[Item]:
        return list(self._pages(name, self.joins, shard_partition(join_id, shard), where=where))

    def settle_join(self, join_id: str, total: int) -> tuple[list[BranchRecord], bool]:
        """Count every recorded branch the join has not counted; return the recorded outcomes in
        index order and whether the join is complete (as the DynamoDB store does)."""
        items = [item for shard in range(shard_count(total)) for item in self._shard_items(join_id, shard)]
        results = sorted((_branch(i) for i in items if i["slot"] >= 0), key=lambda r: r.index)
        counted = {int(n) for i in items if i["slot"] <= shard_slot(0) for n in i.get("done") or ()}
        repeat = {r.index for r in results} - counted
        if len(results) == total:
            repeat |= {shard * SHARD_SIZE for shard in range(shard_count(total))}
        complete = False
        for index in sorted(repeat):
            complete = self.join_branch(join_id, index, total) or complete
        return results, complete

    def branch_results(self, join_id: str, total: int | None = None) -> list[BranchRecord]:
        """Every recorded branch outcome, in index order (``total``: as the DynamoDB store's)."""
        def read(shard: int) -> list[BranchRecord]:
            return [_branch(i) for i in self._shard_items(join_id, shard, lambda slot: slot >= 0, "read branches")]

        return read_by_shard(total, read, lambda found: len(found) == SHARD_SIZE)

    def join_items(self, join_id: str, total: int | None = None) -> list[JoinCounter]:
        """The counter items of a join, the root's first (for inspection)."""
        root = [_counter(i) for i in self._pages("read join", self.joins, join_id, where=lambda slot: slot < 0)]
        if total is None and root and root[0].total:
            total = int(root[0].total) * SHARD_SIZE
        def read(shard: int) -> list[JoinCounter]:
            return [_counter(i) for i in self._shard_items(join_id, shard, lambda slot: slot < 0)]

        counters = read_by_shard(total, read, lambda found: any(len(c.done) == SHARD_SIZE for c in found))
        return root + counters

