"""Signed-out dashboard sessions, in memory (``persistence.sessions`` makes the same requests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import MemoryBase

if TYPE_CHECKING:
    from .tables import Table

#: As in ``persistence.sessions``: the item's key in the idempotency table.
SIGNED_OUT_PREFIX = "dashboard-signed-out#"


class SessionTables(MemoryBase):
    """``end_session`` and ``session_ended`` of the in-memory store."""

    if TYPE_CHECKING:
        guards: Table

    def end_session(self, session_hash: str, until: float) -> None:
        """Mark a session signed out until ``until`` (one PutItem)."""
        item = {"key": SIGNED_OUT_PREFIX + session_hash, "run_id": "-", "created_at": self.now(),
                "retain_until": until}
        self._request("sign out a dashboard session", lambda: self.guards.put(dict(item)))

    def session_ended(self, session_hash: str) -> bool:
        """Whether a session was signed out (one GetItem)."""
        key = SIGNED_OUT_PREFIX + session_hash
        return self._request("read a dashboard session", lambda: self.guards.get(key)) is not None
