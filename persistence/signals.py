"""Signals: stored durably when sent, consumed in send order by the run's waits."""

from __future__ import annotations

from typing import Any

from workflows.core.model.records import SignalRecord
from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.writes.items import signal_record

from .base import StoreBase, plain


class SignalStore(StoreBase):
    """Signal items keyed by (run id, name#send-time#nonce)."""

    @aws_actions("dynamodb:BatchWriteItem@signals")
    def delete_signals(self, run_id: str, keys: list[str]) -> None:
        """Delete signals of ``run_id`` by key (BatchWriteItem, 25 a request); missing ones are fine."""
        with self.errors("delete signals"), self.m.Signal.batch_write() as batch:
            for key in keys:
                batch.delete(self.m.Signal(run_id, key))

    def signals(self, run_id: str, name: str) -> list[SignalRecord]:
        """Return the signals of ``name`` sent to a run, oldest first (paged Query)."""
        return self._read(run_id, self.m.Signal.signal_key.startswith(f"{name}#"))

    def stored_signals(self, run_id: str) -> list[SignalRecord]:
        """Every signal and update request stored under a run, in key order (paged Query)."""
        return self._read(run_id, None)

    @aws_actions("dynamodb:Query@signals")
    def _read(self, run_id: str, condition: Any) -> list[SignalRecord]:
        with self.errors("read signals"):
            return [signal_record(plain(i)) for i in self.m.Signal.query(run_id, condition, consistent_read=True)]
