"""Fan-in joins: branch results plus sharded conditional counters keyed by branch id.

A branch records its result once (conditional put), then adds its index to its shard's set with
``NOT contains`` as the condition: a redelivery can neither record twice nor count twice. The
branch that fills a shard adds the shard to the root set the same way, and the one that fills the
root wins the resume. Counter shard ``s`` and its branches' results live in partition
``<join id>#<s>``, the root in ``<join id>`` (see ``workflows.core.join_layout``): no partition
key takes more than ~200 writes per fan-out, whatever its width.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model.join_layout import (
    ROOT_ENTRY,
    SHARD_SIZE,
    TALLY_ENTRY,
    branch_shard,
    read_by_shard,
    shard_count,
    shard_entry,
    shard_partition,
    shard_size,
)
from ...model.records import BranchRecord
from ..plans import A, Add, Item, Put, Set, Update, plan
from ..rules import check_item_size
from .base import WritesBase
from .items import ENTRY


@dataclass
class JoinCounter:
    """One counter item of a join: the members counted in a shard (entry -2 - n) or the root (-1)."""

    join_id: str
    entry: int
    total: int | None
    done: set[int]


def _branch(item: Item) -> BranchRecord:
    return BranchRecord(index=int(item[ENTRY]), data=item.get("data"), error=item.get("error"))


def _counter(item: Item) -> JoinCounter:
    return JoinCounter(item["join_id"], int(item[ENTRY]), item.get("total"), {int(n) for n in item.get("done") or ()})


class JoinWrites(WritesBase):
    """Branch results (entry >= 0) and counters (entry < 0) of a join (see the JoinStore port)."""

    def record_branch(self, join_id: str, index: int, data: str | None, error: str | None) -> bool:
        """Record branch ``index``'s outcome once; False if it was recorded already."""
        check_item_size({"data": data, "error": error})
        item = {"join_id": shard_partition(join_id, branch_shard(index)), ENTRY: index, "data": data, "error": error}
        return self.commit(plan("record branch", Put("joins", item, A(ENTRY).missing()))).applied

    def _count(self, partition: str, entry: int, member: int, size: int) -> bool | None:
        """Add ``member`` to the set at ``entry``: True if this filled it, False if not yet, None if a repeat."""
        done = self.commit(plan("join", Update("joins", (partition, entry), (
            Add("done", frozenset({member})), Set("total", size)), A("done").missing() | ~A("done").contains(member))))
        return len((done.item or {}).get("done") or ()) == size if done.applied else None

    def _is_full(self, partition: str, entry: int, size: int) -> bool:
        item = self.read_item("joins", (partition, entry), "read join")
        return item is not None and len(item.get("done") or ()) == size

    def join_branch(self, join_id: str, index: int, total: int) -> bool:
        """Count branch ``index`` of ``total`` (idempotently: a repeat counts nothing twice and still
        reports completion); True when the join is complete."""
        shard, shards = branch_shard(index), shard_count(total)
        size, partition = shard_size(shard, total), shard_partition(join_id, shard)
        filled = self._count(partition, shard_entry(shard), index, size)
        if filled is False or (filled is None and not self._is_full(partition, shard_entry(shard), size)):
            return False
        if shards == 1:
            return True
        root = self._count(join_id, ROOT_ENTRY, shard, shards)
        return root is True or (root is None and self._is_full(join_id, ROOT_ENTRY, shards))

    def tally_branch(self, join_id: str, index: int, failed: bool) -> tuple[set[int], set[int]]:
        """Add branch ``index`` to the succeeded (or failed) set of a fan-out with completion criteria,
        once (a repeat adds nothing and reads the sets); the two sets after."""
        member, other = ("failed", "ok") if failed else ("ok", "failed")
        cond = (A(member).missing() | ~A(member).contains(index)) & (A(other).missing() | ~A(other).contains(index))
        done = self.commit(plan("tally branch", Update("joins", (join_id, TALLY_ENTRY),
                                                       (Add(member, frozenset({index})),), cond)))
        item = done.item if done.applied else self.read_item("joins", (join_id, TALLY_ENTRY), "read tally")
        return {int(n) for n in (item or {}).get("ok") or ()}, {int(n) for n in (item or {}).get("failed") or ()}

    def read_tally(self, join_id: str) -> tuple[set[int], set[int]]:
        """The succeeded and failed sets of a fan-out with completion criteria (one consistent read)."""
        item = self.read_item("joins", (join_id, TALLY_ENTRY), "read tally") or {}
        return {int(n) for n in item.get("ok") or ()}, {int(n) for n in item.get("failed") or ()}

    def get_branch(self, join_id: str, index: int) -> BranchRecord | None:
        """Branch ``index``'s recorded outcome, or None (consistent read)."""
        item = self.read_item("joins", (shard_partition(join_id, branch_shard(index)), index), "read branch")
        return None if item is None else _branch(item)

    def _shard_items(self, join_id: str, shard: int, low: int | None = None, high: int | None = None,
                     name: str = "read join") -> list[Item]:
        return self.query_items(name, "joins", shard_partition(join_id, shard), low, high)

    def settle_join(self, join_id: str, total: int) -> tuple[list[BranchRecord], bool]:
        """Count every recorded branch the join has not counted (its worker died between recording and
        counting); the recorded outcomes in index order and whether the join is complete."""
        items = [item for shard in range(shard_count(total)) for item in self._shard_items(join_id, shard)]
        results = sorted((r for r in (_branch(i) for i in items if i[ENTRY] >= 0) if not r.closed),
                         key=lambda r: r.index)
        counted = {int(n) for i in items if i[ENTRY] <= shard_entry(0) for n in i.get("done") or ()}
        repeat = {r.index for r in results} - counted
        if len(results) == total:  # one repeat per shard also re-adds a full shard missing from the root
            repeat |= {shard * SHARD_SIZE for shard in range(shard_count(total))}
        complete = False
        for index in sorted(repeat):
            complete = self.join_branch(join_id, index, total) or complete
        return results, complete

    def branch_results(self, join_id: str, total: int | None = None) -> list[BranchRecord]:
        """Every recorded branch outcome in index order (``total``: read every shard; without it,
        shards in order while each is full)."""
        def read(shard: int) -> list[BranchRecord]:
            return [_branch(i) for i in self._shard_items(join_id, shard, 0, None, "read branches")]

        found = read_by_shard(total, read, lambda found: len(found) == SHARD_SIZE)
        return [r for r in found if not r.closed]  # a slot the retention sweep closed holds no outcome

    def join_items(self, join_id: str, total: int | None = None) -> list[JoinCounter]:
        """The counter items of a join, the root's first (for inspection)."""
        root = [_counter(i) for i in self.query_items("read join", "joins", join_id, None, -1)]
        if total is None and root and root[0].total:
            total = int(root[0].total) * SHARD_SIZE

        def read(shard: int) -> list[JoinCounter]:
            return [_counter(i) for i in self._shard_items(join_id, shard, None, -1)]

        return root + read_by_shard(total, read, lambda found: any(len(c.done) == SHARD_SIZE for c in found))
