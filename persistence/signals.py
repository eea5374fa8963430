"""Signals: stored durably when sent, consumed in send order by the run's waits."""

from __future__ import annotations

import secrets
import time
from typing import Any

from workflows.core.records import SignalRecord

from .base import LIVE_STATUSES, StoreBase, check_item_size


class SignalStore(StoreBase):
    """Signal items keyed by (run id, name#send-time#nonce)."""

    def put_signal(self, run_id: str, name: str, payload: str, *, wake: str | None = None) -> SignalRecord | None:
        """Store a signal under ``run_id`` and wake run ``wake`` (default ``run_id``: a chain's
        signals are kept under its anchor and wake its current run), in one transaction; its
        key orders it after every earlier signal of the name. Returns None (nothing stored) if
        the run to wake has ended or does not exist.

        A retry of this very request (its response lost) writes the same item again and
        wakes the run once more: harmless.
        """
        check_item_size({"payload": payload})
        key = f"{name}#{time.time_ns():020d}#{secrets.token_hex(4)}"
        record = SignalRecord(run_id=run_id, signal_key=key, name=name, payload=payload, sent_at=self.now())
        item = self.m.Signal(run_id, key, name=name, payload=payload, sent_at=record.sent_at)
        Run = self.m.Run

        def build(tx: Any) -> None:
            tx.save(item)
            tx.update(Run(wake or run_id), actions=self.wake_actions(), condition=Run.status.is_in(*LIVE_STATUSES))

        return record if self.transact("put signal", build) else None

    def delete_signals(self, run_id: str, keys: list[str]) -> None:
        """Delete signals of ``run_id`` by key (BatchWriteItem, 25 a request); missing ones are fine."""
        with self.errors("delete signals"), self.m.Signal.batch_write() as batch:
            for key in keys:
                batch.delete(self.m.Signal(run_id, key))

    def signals(self, run_id: str, name: str) -> list[SignalRecord]:
        """Return the signals of ``name`` sent to a run, oldest first (paged Query)."""
        with self.errors("read signals"):
            return [SignalRecord(run_id=i.run_id, signal_key=i.signal_key, name=i.name, payload=i.payload,
                                 sent_at=i.sent_at)
                    for i in self.m.Signal.query(run_id, self.m.Signal.signal_key.startswith(f"{name}#"),
                                                 consistent_read=True)]
