"""Retention in memory: the ``by_retention`` index and the stamping of an ended run's items."""

from __future__ import annotations

import json
from typing import Any

from ..core.join_layout import fan_out_width_at, partitions
from ..core.records import TERMINAL, RunStatus, TimerKind, op_timer_id
from ..core.retention import fan_out_positions
from ..core.storage import shard_of
from ..core.tags import index_key, index_sort_key
from .base import MemoryBase
from .tables import Item, Table, actions, present, remove, set_


class RetentionTables(MemoryBase):
    """``runs_to_retain`` and ``retain_run``, request by request as the DynamoDB store does."""

    runs: Table
    events: Table
    joins: Table
    signal_items: Table
    hooks: Table
    guards: Table
    run_tags: Table
    timers: Table

    def runs_to_retain(self, ended_before: float, limit: int = 100) -> list[str]:
        """Ended runs not yet stamped that ended before ``ended_before``, a fair share from every shard."""
        items = self._read_shards(self.settings.index_shards, limit, lambda shard: self._pages(
            "query ended runs", self.runs, shard, index="by_retention", where=lambda at: at < ended_before))
        return [item["run_id"] for item in items]

    def retain_run(self, run_id: str) -> bool:
        """Stamp every item of an ended run with the run's TTL, then take it out of the index."""
        run = self._request("read run", lambda: self.runs.get(run_id))
        if run is None or run.get("status") not in TERMINAL or "retain_shard" not in run or "retain_until" not in run:
            return False
        until = run["retain_until"]
        events = list(self._pages("read history", self.events, run_id))
        outcomes = [e for e in events if e["seq"] >= 0 and e["seq"] % 1000 == 999]
        kinds = {int(e["seq"]) // 1000: e["kind"] for e in outcomes}
        names = {int(e["seq"]) // 1000: e.get("name") for e in outcomes}
        for event in events:
            self._stamp(until, self.events, event)
        waiting = json.loads(run["waiting"]) if run.get("waiting") else None
        for pos in fan_out_positions(kinds, int(run.get("cursor", -1)), waiting):
            join_id = f"{run_id}#{pos}"
            joined = [(self.joins, i) for partition in partitions(join_id, fan_out_width_at(pos, names, waiting) or 1)
                      for i in self._pages("read join", self.joins, partition)]
            joined += [(self.events, i) for i in self._pages("read join", self.events, join_id)]
            for table, item in joined:
                self._stamp(until, table, item)
        for signal in list(self._pages("read signals", self.signal_items, run_id)):
            self._stamp(until, self.signal_items, signal)
        for hook in list(self._pages("list hooks", self.hooks, run_id, index="by_run")):
            self._stamp(until, self.hooks, {"token_hash": hook["token_hash"]})  # the index does not show the TTL
            timer = op_timer_id(run_id, int(hook["pos"]), TimerKind.HOOK_TIMEOUT.value)
            self._stamp(until, self.timers, {"timer_id": timer})
        if run.get("idempotency_key") is not None and run["status"] != RunStatus.CONTINUED:
            self._stamp(until, self.guards, {"key": run["idempotency_key"]})
        for key, value in sorted(json.loads(run.get("tags") or "{}").items()):
            self._stamp(until, self.run_tags, {"tag": index_key(key, value, run_id),
                                               "run_key": index_sort_key(run["created_at"], run_id)})
        head = run.get("chain_head")
        if head and head != run_id and run["status"] != RunStatus.CONTINUED:  # the chain ended: its anchor expires
            self._update("retain chain anchor", self.runs, (head,), actions(
                set_("retain_until", until), set_("retain_shard", shard_of(head, self.settings.index_shards))),
                lambda item: "run_id" in item and "retain_until" not in item)
        return self._update("release ended run", self.runs, (run_id,), remove("retain_shard"),
                            present("retain_shard")) is not None

    def _stamp(self, until: Any, table: Table, item: Item) -> None:
        """Set ``retain_until`` on one existing item (unless a read showed it set already)."""
        if item.get("retain_until") == until:
            return
        self._update("stamp retention", table, table.key(item), set_("retain_until", until), present(table.hash_key))
