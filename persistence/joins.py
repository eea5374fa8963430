"""Fan-in joins: branch results plus sharded conditional counters keyed by branch id.

A branch records its result once (conditional put), then adds its index to its
shard's set with ``NOT contains`` as the condition: a redelivery can neither
record twice nor count twice. The branch that fills a shard adds the shard to the
root set the same way, and the one that fills the root wins the resume.
"""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.records import BranchRecord

from .base import StoreBase, check_item_size

SHARD_SIZE = 100
ROOT_SLOT = -1


def shard_slot(shard: int) -> int:
    """Return the counter slot of shard ``shard``."""
    return -2 - shard


def shard_count(total: int) -> int:
    """How many counter shards a join of ``total`` branches uses."""
    return max(1, -(-total // SHARD_SIZE))


class JoinStore(StoreBase):
    """Branch results (slot >= 0) and counters (slot < 0) of a join."""

    def record_branch(self, join_id: str, index: int, data: str | None, error: str | None) -> bool:
        """Record branch ``index``'s outcome once; False if it was already recorded."""
        check_item_size({"data": data, "error": error})
        item = self.m.Join(join_id, index, data=data, error=error)
        return self.conditional("record branch", lambda: item.save(condition=self.m.Join.slot.does_not_exist()))

    def _count(self, join_id: str, slot: int, member: int, size: int) -> bool | None:
        """Add ``member`` to the set at ``slot``: True if this filled it, False if not
        yet full, None if ``member`` was already counted (a repeat)."""
        Join = self.m.Join
        item = Join(join_id, slot)
        added = self.conditional("join", lambda: item.update(
            actions=[Join.done.add({member}), Join.total.set(size)],
            condition=Join.done.does_not_exist() | ~Join.done.contains(member)))
        return len(item.done or ()) == size if added else None

    def _is_full(self, join_id: str, slot: int, size: int) -> bool:
        try:
            with self.errors("read join"):
                return len(self.m.Join.get(join_id, slot, consistent_read=True).done or ()) == size
        except DoesNotExist:
            return False

    def join_branch(self, join_id: str, index: int, total: int) -> bool:
        """Count branch ``index`` of ``total``; return True when the join is complete.

        Idempotent: a repeat (redelivery, or a retry after a crash) counts
        nothing twice and still reports completion, so the caller's conditional
        write of the parent's outcome, not this call, picks the one resumer.
        """
        shard, shards = index // SHARD_SIZE, shard_count(total)
        size = min(SHARD_SIZE, total - shard * SHARD_SIZE)
        filled = self._count(join_id, shard_slot(shard), index, size)
        if filled is False or (filled is None and not self._is_full(join_id, shard_slot(shard), size)):
            return False
        if shards == 1:
            return True
        root = self._count(join_id, ROOT_SLOT, shard, shards)
        return root is True or (root is None and self._is_full(join_id, ROOT_SLOT, shards))

    def get_branch(self, join_id: str, index: int) -> BranchRecord | None:
        """Return branch ``index``'s recorded outcome, or None (consistent read)."""
        try:
            with self.errors("read branch"):
                item = self.m.Join.get(join_id, index, consistent_read=True)
        except DoesNotExist:
            return None
        return BranchRecord(index=int(item.slot), data=item.data, error=item.error)

    def settle_join(self, join_id: str, total: int) -> tuple[list[BranchRecord], bool]:
        """Count every recorded branch the join has not counted (its worker died between
        recording and counting); return the recorded outcomes in index order and whether
        the join is complete. One Query, plus a count per repair.
        """
        with self.errors("read join"):
            items = list(self.m.Join.query(join_id, consistent_read=True))
        results = [BranchRecord(index=int(i.slot), data=i.data, error=i.error) for i in items if i.slot >= 0]
        counted = {int(n) for i in items if i.slot <= shard_slot(0) for n in i.done or ()}
        repeat = {r.index for r in results} - counted
        if len(results) == total:  # one repeat per shard also re-adds a full shard missing from the root
            repeat |= {shard * SHARD_SIZE for shard in range(shard_count(total))}
        complete = False
        for index in sorted(repeat):
            complete = self.join_branch(join_id, index, total) or complete
        return results, complete

    def branch_results(self, join_id: str) -> list[BranchRecord]:
        """Return every recorded branch outcome in index order (paged Query)."""
        with self.errors("read branches"):
            return [BranchRecord(index=int(i.slot), data=i.data, error=i.error)
                    for i in self.m.Join.query(join_id, self.m.Join.slot >= 0, consistent_read=True)]

    def join_items(self, join_id: str) -> list[Any]:
        """Return the counter items of a join (for inspection)."""
        with self.errors("read join"):
            return list(self.m.Join.query(join_id, self.m.Join.slot < 0, consistent_read=True))
