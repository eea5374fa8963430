"""The write of a signal: stored after every earlier one of its name, waking the run, in one transaction."""

from __future__ import annotations

import secrets

from ...model.records import SignalRecord
from ..plans import Put, plan
from ..rules import check_item_size, signal_time
from .base import WritesBase


class SignalWrites(WritesBase):
    """``put_signal`` (see the SignalStore port)."""

    def signal_nonce(self) -> str:
        """The last part of a signal's key, which keeps two signals of one instant apart."""
        return secrets.token_hex(4)

    def put_signal(self, run_id: str, name: str, payload: str, *, wake: str | None = None) -> SignalRecord | None:
        """Store a signal under ``run_id`` after every earlier one of its name and wake run ``wake``
        (default ``run_id``), in one transaction; None (nothing stored) if that run has ended or does
        not exist, or if a signal ordered after this one was stored since the anchor's
        ``signal_clock`` was read (one consistent read; see ``core.storage.signal_time``)."""
        check_item_size({"payload": payload})
        anchor = self.anchor_clock(run_id)
        if anchor is None:
            return None
        at = signal_time(self.now(), anchor.get("signal_clock"))
        key = f"{name}#{at:020d}#{self.signal_nonce()}"
        record = SignalRecord(run_id=run_id, signal_key=key, name=name, payload=payload, sent_at=self.now())
        item = {"run_id": run_id, "signal_key": key, "name": name, "payload": payload, "sent_at": record.sent_at}
        ops = self.ordered_after(run_id, at, wake or run_id)
        return record if self.commit(plan("put signal", Put("signals", item), *ops)) else None
