"""Retention: stamp every item of an ended run with its TTL (see ``workflows.core.retention``)."""

from __future__ import annotations

import functools
import json
from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.join_layout import fan_out_width_at, partitions
from workflows.core.records import TERMINAL, RunStatus, TimerKind, op_timer_id
from workflows.core.retention import fan_out_positions
from workflows.core.tags import index_key, index_sort_key

from .base import StoreBase, shard_of


class RetentionStore(StoreBase):
    """The sparse ``by_retention`` index of ended runs and the stamping of their items."""

    def runs_to_retain(self, ended_before: float, limit: int = 100) -> list[str]:
        """Ended runs not yet stamped that ended before ``ended_before``, a fair share from every shard."""
        Run = self.m.Run
        items = self.read_shards("query ended runs", self.shards, limit, lambda shard: Run.by_retention.query(
            shard, Run.ended_at < ended_before))
        return [item.run_id for item in items]

    def retain_run(self, run_id: str) -> bool:
        """Stamp every item of an ended run with the run's TTL, then take it out of the index.

        One write per item not stamped yet (a repeat after a crash skips what it sees stamped);
        ``attribute_exists`` on each, so a deleted item is never brought back.
        """
        Run, Event, Join, Signal, Hook = self.m.Run, self.m.Event, self.m.Join, self.m.Signal, self.m.Hook
        try:
            with self.errors("read run"):
                run = Run.get(run_id, consistent_read=True)
        except DoesNotExist:
            return False
        until = run.retain_until
        if run.status not in TERMINAL or run.retain_shard is None or until is None:
            return False
        stamp = functools.partial(self._stamp, until)
        with self.errors("read history"):
            events = list(Event.query(run_id, consistent_read=True))
        outcomes = [e for e in events if e.seq >= 0 and e.seq % 1000 == 999]
        kinds = {int(e.seq) // 1000: e.kind for e in outcomes}
        names = {int(e.seq) // 1000: e.name for e in outcomes}
        for event in events:
            stamp(event, Event.run_id)
        waiting = json.loads(run.waiting) if run.waiting else None
        for pos in fan_out_positions(kinds, int(run.cursor if run.cursor is not None else -1), waiting):
            join_id = f"{run_id}#{pos}"
            with self.errors("read join"):
                joined = [item for partition in partitions(join_id, fan_out_width_at(pos, names, waiting) or 1)
                          for item in Join.query(partition, consistent_read=True)]
                joined += list(Event.query(join_id, consistent_read=True))
            for item in joined:
                stamp(item, type(item).join_id if isinstance(item, Join) else Event.run_id)
        with self.errors("read signals"):
            signals = list(Signal.query(run_id, consistent_read=True))
        for signal in signals:
            stamp(signal, Signal.run_id)
        with self.errors("list hooks"):
            hooks = [(Hook(item.token_hash), int(item.pos)) for item in Hook.by_run.query(run_id)]
        for hook, pos in hooks:
            stamp(hook, Hook.token_hash, force=True)  # the index does not show the TTL
            # A hook's timeout timer outlives the run's end when the run did not wait on the hook there.
            timer = self.m.Timer(op_timer_id(run_id, pos, TimerKind.HOOK_TIMEOUT.value))
            stamp(timer, self.m.Timer.timer_id, force=True)
        if run.idempotency_key is not None and run.status != RunStatus.CONTINUED:  # the chain's last run keeps it
            stamp(self.m.Guard(run.idempotency_key), self.m.Guard.key, force=True)
        for key, value in sorted(json.loads(run.tags or "{}").items()):
            tag = self.m.Tag(index_key(key, value, run_id), index_sort_key(run.created_at, run_id))
            stamp(tag, self.m.Tag.tag, force=True)
        head = run.chain_head
        if head and head != run_id and run.status != RunStatus.CONTINUED:  # the chain ended: its anchor expires
            self.conditional("retain chain anchor", lambda: Run(head).update(
                actions=[Run.retain_until.set(until), Run.retain_shard.set(shard_of(head, self.shards))],
                condition=Run.run_id.exists() & Run.retain_until.does_not_exist()))
        return self.conditional("release ended run", lambda: Run(run_id).update(
            actions=[Run.retain_shard.remove()], condition=Run.retain_shard.exists()))

    def _stamp(self, until: Any, item: Any, hash_attr: Any, *, force: bool = False) -> None:
        """Set ``retain_until`` on one existing item (unless a read showed it set already)."""
        if not force and item.retain_until == until:
            return
        model = type(item)
        self.conditional("stamp retention", lambda: item.update(
            actions=[model.retain_until.set(until)], condition=hash_attr.exists()))
