"""Retention: stamp every item of an ended run with its TTL (see ``workflows.core.retention``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...model.join_layout import (
    ROOT_ENTRY,
    TALLY_ENTRY,
    branch_shard,
    fan_out_width_at,
    partitions,
    shard_count,
    shard_entry,
    shard_partition,
)
from ...model.records import LIVE, TERMINAL, HookRecord, RunStatus, TimerKind, op_timer_id
from ...model.states import OpKind
from ..aws_actions import aws_actions
from ..plans import A, Item, Key, Remove, Set, Update, plan
from ..retention import fan_out_positions
from ..rules import shard_of
from ..tags import index_key, index_sort_key
from .base import WritesBase
from .items import ENTRY

#: The key attributes of each table whose items a run's end stamps.
KEYS = {"history": ("run_id", "seq"), "joins": ("join_id", ENTRY), "signals": ("run_id", "signal_key")}


class RetentionWrites(WritesBase):
    """``retain_run`` and ``keep_run_alive`` (see the RetentionStore port)."""

    if TYPE_CHECKING:
        def hooks_for_run(self, run_id: str) -> list[HookRecord]: ...

    @aws_actions("dynamodb:UpdateItem@history", "dynamodb:UpdateItem@joins", "dynamodb:UpdateItem@signals")
    def retain_run(self, run_id: str) -> bool:
        """Stamp every item of an ended run with the run's TTL, then take it out of the index.

        One write per item whose TTL is not yet at least the run's (a repeat after a crash skips
        what it sees stamped; an item written already expiring later, as history and join items
        are, is left as it is); ``attribute_exists`` on each, so a deleted item is never brought
        back. A fan-out's join is closed instead (``_close_join``): a branch reads no run item, so
        one still running, or a late copy, must find every slot and counter of its join there
        already, with a TTL.
        """
        run = self.read_item("runs", (run_id,))
        if run is None or run.get("status") not in TERMINAL or "retain_shard" not in run or "retain_until" not in run:
            return False
        until = run["retain_until"]
        found, closing = self._run_items(run_id, run)
        for join_id, width, items in closing:
            self._close_join(until, join_id, width, items)
        for table, item in found:
            if not _lasts(item, until):
                self._stamp(until, table, tuple(item[k] for k in KEYS[table]))
        for hook in self.hooks_for_run(run_id):  # a hook's timeout timer outlives an end that did not wait on it
            self._stamp(until, "hooks", (hook.token_hash,))
            self._stamp(until, "timers", (op_timer_id(run_id, hook.pos, TimerKind.HOOK_TIMEOUT.value),))
        if run.get("idempotency_key") is not None and run["status"] != RunStatus.CONTINUED:  # a chain's last keeps it
            self._stamp(until, "idempotency", (run["idempotency_key"],))
        for key, value in sorted(json.loads(run.get("tags") or "{}").items()):
            self._stamp(until, "tags", (index_key(key, value, run_id), index_sort_key(run["created_at"], run_id)))
        head = run.get("chain_head")
        if head and head != run_id and run["status"] != RunStatus.CONTINUED:  # the chain ended: its anchor expires
            self.commit(plan("retain chain anchor", Update("runs", (head,), (
                Set("retain_until", until), Set("retain_shard", shard_of(head, self.settings.index_shards))),
                A("run_id").exists() & A("retain_until").missing())))
        return self.commit(plan("release ended run", Update("runs", (run_id,), (Remove("retain_shard"),),
                                                            A("retain_shard").exists()))).applied

    def keep_run_alive(self, run_id: str, kept_before: float, until: int) -> bool:
        """Renew a live run's history, join and signal items if it was not kept alive since
        ``kept_before``, and those of the first run of its continue-as-new chain likewise (that run
        ended ``continued`` and has no TTL while the chain lives: a fork of it, or a read of its
        history, must find it whole; the chain's signals are kept under its id). Each item whose
        TTL is earlier than ``until`` is set to it (conditioned on that, so a TTL is never moved in,
        nor a deleted item brought back; an item written without a TTL keeps none), then the run
        item's ``stamped_at`` is set to when this began (last: a pass that dies half-way renews
        again; an item written meanwhile expires later than one renewed). Whether either was renewed."""
        began = self.now()  # items written from now on expire later than the renewal's ``until``
        run = self.read_item("runs", (run_id,))
        if run is None or run.get("status") not in LIVE:
            return False
        renewed = False
        head = run.get("chain_head")
        if head and head != run_id:
            anchor = self.read_item("runs", (head,))
            if anchor is not None and anchor.get("status") == RunStatus.CONTINUED and "retain_until" not in anchor:
                renewed = self._renew(head, anchor, kept_before, began, until)
        return self._renew(run_id, run, kept_before, began, until) or renewed

    @aws_actions("dynamodb:UpdateItem@history", "dynamodb:UpdateItem@joins", "dynamodb:UpdateItem@signals")
    def _renew(self, run_id: str, run: Item, kept_before: float, began: float, until: int) -> bool:
        """Renew one run's items (see ``keep_run_alive``) unless it was kept alive since ``kept_before``."""
        if float(run.get("stamped_at") or run["created_at"]) >= kept_before:
            return False
        found, closing = self._run_items(run_id, run)
        found += [("joins", i) for _, _, items in closing for i in items]
        for table, item in found:
            if isinstance(item.get("retain_until"), (int, float)) and item["retain_until"] < until:
                self.commit(plan("keep alive", Update(table, tuple(item[k] for k in KEYS[table]), (
                    Set("retain_until", until),), A("retain_until") < until)))
        return self.commit(plan("kept alive", Update("runs", (run_id,), (Set("stamped_at", began),),
                                                     A("run_id").exists()))).applied

    def _run_items(self, run_id: str, run: Item) -> tuple[list[tuple[str, Item]], list[tuple[str, int, list[Item]]]]:
        """The history, join and signal items of a run: ``(table, item)`` pairs, and each fan-out join
        whose width is known, as ``(join id, width, its items)`` (those are closed or renewed as a whole)."""
        events = self.query_items("read history", "history", run_id)
        outcomes = [e for e in events if e["seq"] >= 0 and e["seq"] % 1000 == 999]
        kinds = {int(e["seq"]) // 1000: e["kind"] for e in outcomes}
        # a fan-out's width from its outcome's name, else from the op in flight (an ``end`` record a cancel
        # wrote at its position names none)
        races = (OpKind.PARALLEL, OpKind.FIRST_OF)
        names = {int(e["seq"]) // 1000: e.get("name") for e in outcomes if e["kind"] in races}
        found: list[tuple[str, Item]] = [("history", e) for e in events]
        waiting = json.loads(run["waiting"]) if run.get("waiting") else None
        closing: list[tuple[str, int, list[Item]]] = []
        for pos in fan_out_positions(kinds, int(run.get("cursor", -1)), waiting):
            join_id, width = f"{run_id}#{pos}", fan_out_width_at(pos, names, waiting)
            items = [i for partition in partitions(join_id, width or 1)
                     for i in self.query_items("read join", "joins", partition)]
            if width is None:
                found += [("joins", i) for i in items]
            else:
                closing.append((join_id, width, items))
            found += [("history", i) for i in self.query_items("read join", "history", join_id)]
        found += [("signals", i) for i in self.query_items("read signals", "signals", run_id)]
        return found, closing

    def _close_join(self, until: Any, join_id: str, width: int, items: list[Any]) -> None:
        """Stamp every slot of a ``width``-branch join with the run's TTL, creating those not written:
        each branch's result slot (one created here holds no outcome: ``BranchRecord.closed``, and a
        branch's conditional put then loses), each counter shard, the root and the tally. A branch of
        the ended run that writes later finds them (its result's put loses, its count or tally updates
        an item that keeps a TTL), so nothing it writes lacks one, and it reads no run item."""
        stamped = {(i["join_id"], int(i[ENTRY])) for i in items if _lasts(i, until)}
        keys = [(shard_partition(join_id, branch_shard(index)), index) for index in range(width)]
        keys += [(shard_partition(join_id, shard), shard_entry(shard)) for shard in range(shard_count(width))]
        keys += [(join_id, ROOT_ENTRY), (join_id, TALLY_ENTRY)]
        for key in keys:
            if key not in stamped:
                self.commit(plan("close join", Update("joins", key, (Set("retain_until", until),), None)))
        for key in {(i["join_id"], int(i[ENTRY])) for i in items} - stamped - set(keys):
            self._stamp(until, "joins", key)  # any other item of the join (none in this layout)

    def _stamp(self, until: Any, table: str, key: Key) -> None:
        """Set ``retain_until`` on one existing item."""
        hash_key = {"hooks": "token_hash", "timers": "timer_id", "idempotency": "key", "tags": "tag",
                    "joins": "join_id"}.get(table, "run_id")
        self.commit(plan("stamp retention", Update(table, key, (Set("retain_until", until),), A(hash_key).exists())))


def _lasts(item: Item, until: Any) -> bool:
    """The item's TTL is already at least ``until`` (it was stamped, or written expiring later)."""
    have = item.get("retain_until")
    return isinstance(have, (int, float)) and have >= until
