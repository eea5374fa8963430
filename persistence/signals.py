"""Signals: stored durably when sent, consumed in send order by the run's waits."""

from __future__ import annotations

import secrets
from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.records import SignalRecord
from workflows.core.storage import signal_time

from .base import LIVE_STATUSES, StoreBase, check_item_size


class SignalStore(StoreBase):
    """Signal items keyed by (run id, name#send-time#nonce)."""

    def put_signal(self, run_id: str, name: str, payload: str, *, wake: str | None = None) -> SignalRecord | None:
        """Store a signal under ``run_id`` and wake run ``wake`` (default ``run_id``: a chain's
        signals are kept under its anchor and wake its current run), in one transaction; its
        key orders it after every earlier signal of the name. Returns None (nothing stored) if
        the run to wake has ended or does not exist.

        A retry of this very request (its response lost) writes the same item again and
        wakes the run once more: harmless. The key's number is :func:`signal_time` (one consistent
        read of the anchor's ``signal_clock``, which the transaction advances, conditional on no
        later signal stored since), so a signal is ordered after every signal stored before it was
        sent whatever the senders' clocks; None also if that condition failed (the caller reads the
        run again and sends again).
        """
        check_item_size({"payload": payload})
        Run = self.m.Run
        try:
            with self.errors("read run"):
                anchor = Run.get(run_id, consistent_read=True, attributes_to_get=["run_id", "signal_clock"])
        except DoesNotExist:
            return None
        at = signal_time(self.now(), anchor.signal_clock)
        key = f"{name}#{at:020d}#{secrets.token_hex(4)}"
        record = SignalRecord(run_id=run_id, signal_key=key, name=name, payload=payload, sent_at=self.now())
        item = self.m.Signal(run_id, key, name=name, payload=payload, sent_at=record.sent_at)
        # the anchor exists and no signal ordered after this one was stored since it was read
        ahead = Run.run_id.exists() & (Run.signal_clock.does_not_exist() | (Run.signal_clock <= at))
        live = Run.status.is_in(*LIVE_STATUSES)

        def build(tx: Any) -> None:
            tx.save(item)
            if (wake or run_id) == run_id:  # one update of the anchor (a transaction touches an item once)
                tx.update(Run(run_id), actions=[*self.wake_actions(), Run.signal_clock.set(at)], condition=ahead & live)
            else:
                tx.update(Run(run_id), actions=[Run.signal_clock.set(at)], condition=ahead)
                tx.update(Run(wake or run_id), actions=self.wake_actions(), condition=live)

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
