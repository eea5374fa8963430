"""Fan-in joins: branch results plus sharded conditional counters keyed by branch id.

A branch records its result once (conditional put), then adds its index to its
shard's set with ``NOT contains`` as the condition: a redelivery can neither
record twice nor count twice. The branch that fills a shard adds the shard to the
root set the same way, and the one that fills the root wins the resume.

Counter shard ``s`` and its branches' results live in partition ``<join id>#<s>``, the
root in ``<join id>`` (see ``workflows.core.join_layout``): no partition key takes more
than ~200 writes per fan-out, whatever its width.
"""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.join_layout import (
    ROOT_SLOT,
    SHARD_SIZE,
    branch_shard,
    read_by_shard,
    shard_count,
    shard_partition,
    shard_size,
    shard_slot,
)
from workflows.core.records import BranchRecord

from .base import StoreBase, check_item_size


def _branch(item: Any) -> BranchRecord:
    return BranchRecord(index=int(item.slot), data=item.data, error=item.error)


class JoinStore(StoreBase):
    """Branch results (slot >= 0) and counters (slot < 0) of a join."""

    def record_branch(self, join_id: str, index: int, data: str | None, error: str | None) -> bool:
        """Record branch ``index``'s outcome once; False if it was already recorded."""
        check_item_size({"data": data, "error": error})
        item = self.m.Join(shard_partition(join_id, branch_shard(index)), index, data=data, error=error)
        return self.conditional("record branch", lambda: item.save(condition=self.m.Join.slot.does_not_exist()))

    def _count(self, partition: str, slot: int, member: int, size: int) -> bool | None:
        """Add ``member`` to the set at ``slot``: True if this filled it, False if not
        yet full, None if ``member`` was already counted (a repeat)."""
        Join = self.m.Join
        item = Join(partition, slot)
        added = self.conditional("join", lambda: item.update(
            actions=[Join.done.add({member}), Join.total.set(size)],
            condition=Join.done.does_not_exist() | ~Join.done.contains(member)))
        return len(item.done or ()) == size if added else None

    def _is_full(self, partition: str, slot: int, size: int) -> bool:
        try:
            with self.errors("read join"):
                return len(self.m.Join.get(partition, slot, consistent_read=True).done or ()) == size
        except DoesNotExist:
            return False

    def join_branch(self, join_id: str, index: int, total: int) -> bool:
        """Count branch ``index`` of ``total``; return True when the join is complete.

        Idempotent: a repeat (redelivery, or a retry after a crash) counts
        nothing twice and still reports completion, so the caller's conditional
        write of the parent's outcome, not this call, picks the one resumer.
        """
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
        """Return branch ``index``'s recorded outcome, or None (consistent read)."""
        try:
            with self.errors("read branch"):
                item = self.m.Join.get(shard_partition(join_id, branch_shard(index)), index, consistent_read=True)
        except DoesNotExist:
            return None
        return _branch(item)

    def _shard_items(self, join_id: str, shard: int, cond: Any = None, action: str = "read join") -> list[Any]:
        with self.errors(action):
            return list(self.m.Join.query(shard_partition(join_id, shard), cond, consistent_read=True))

    def settle_join(self, join_id: str, total: int) -> tuple[list[BranchRecord], bool]:
        """Count every recorded branch the join has not counted (its worker died between
        recording and counting); return the recorded outcomes in index order and whether
        the join is complete. One Query per counter shard, plus a count per repair.
        """
        items = [item for shard in range(shard_count(total)) for item in self._shard_items(join_id, shard)]
        results = sorted((_branch(i) for i in items if i.slot >= 0), key=lambda r: r.index)
        counted = {int(n) for i in items if i.slot <= shard_slot(0) for n in i.done or ()}
        repeat = {r.index for r in results} - counted
        if len(results) == total:  # one repeat per shard also re-adds a full shard missing from the root
            repeat |= {shard * SHARD_SIZE for shard in range(shard_count(total))}
        complete = False
        for index in sorted(repeat):
            complete = self.join_branch(join_id, index, total) or complete
        return results, complete

    def branch_results(self, join_id: str, total: int | None = None) -> list[BranchRecord]:
        """Return every recorded branch outcome in index order (a paged Query per counter shard).

        ``total``: the join's width, to read every shard; without it, shards are read in
        order while each is full (every result of a complete join)."""
        Join = self.m.Join

        def read(shard: int) -> list[BranchRecord]:
            return [_branch(i) for i in self._shard_items(join_id, shard, Join.slot >= 0, "read branches")]

        return read_by_shard(total, read, lambda found: len(found) == SHARD_SIZE)

    def join_items(self, join_id: str, total: int | None = None) -> list[Any]:
        """Return the counter items of a join, the root's first (for inspection). Without
        ``total``: the shards the root counts, else shards in order while each is full."""
        Join = self.m.Join
        with self.errors("read join"):
            root = list(Join.query(join_id, Join.slot < 0, consistent_read=True))
        if total is None and root and root[0].total:
            total = int(root[0].total) * SHARD_SIZE
        counters = read_by_shard(total, lambda shard: self._shard_items(join_id, shard, Join.slot < 0),
                             lambda found: any(len(i.done or ()) == SHARD_SIZE for i in found))
        return root + counters

